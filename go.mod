module github.com/strata-db/strata

go 1.25.0

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/hashicorp/go-immutable-radix/v2 v2.1.0
	go.uber.org/goleak v1.3.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/hashicorp/golang-lru/v2 v2.0.0 // indirect
	github.com/kr/text v0.2.0 // indirect
)
