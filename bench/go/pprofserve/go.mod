module kiln.bench/pprofserve

go 1.19
