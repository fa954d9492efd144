module viewer

go 1.26
