module kiln.test/cpusplit

go 1.19
