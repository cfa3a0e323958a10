// Placeholder translation unit for targets whose folders hold only headers.
