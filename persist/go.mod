module github.com/strata-db/strata/persist

go 1.25.0

replace github.com/strata-db/strata => ../
