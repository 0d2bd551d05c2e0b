module github.com/strata-db/strata/e2e

go 1.25.0

replace github.com/strata-db/strata => ../

require (
	github.com/chromedp/chromedp v0.23.1
	github.com/strata-db/strata v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
)

require (
	github.com/chromedp/cdproto v0.160.1 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
)
