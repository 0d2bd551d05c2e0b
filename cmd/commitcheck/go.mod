module github.com/strata-db/strata/cmd/commitcheck

go 1.25.0

require (
	go.uber.org/goleak v1.3.0
	golang.org/x/tools v0.45.0
)

require (
	golang.org/x/mod v0.36.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
)
