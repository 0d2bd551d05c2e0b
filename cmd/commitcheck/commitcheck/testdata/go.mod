module commitchecktest

go 1.25.0

require github.com/strata-db/strata v0.0.0

replace github.com/strata-db/strata => ../../../..
