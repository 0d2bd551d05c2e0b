// Package e2e tests the web inspector of package httpapi in a real
// browser: headless Chromium (Debian's chromium package, at
// /usr/bin/chromium or $STRATA_CHROMIUM), driven with chromedp, against a
// live server while a writer commits. It is its own module, so that the
// browser driver is no dependency of Strata's.
//
//	cd e2e && go test ./...
//
// With STRATA_E2E_SCREENSHOTS set to a directory, the test also saves its
// screenshots there.
package e2e
