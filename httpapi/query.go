package httpapi

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// The query parameters of the read endpoints.
//
//	index=I          the index to read ("" or absent: the primary)
//	key=K            the objects whose key is K (get/list)
//	prefix=P         the objects whose key starts with P
//	lowerbound=L     the objects whose key is at least L
//	from=A&to=B      the objects whose key is at least A and below B
//	                 (none of these: every object, in the index's order)
//	raw=1            the keys are raw, in base64url; otherwise text, read
//	                 by the index's FromString (or its default)
//	limit=N          at most N objects; the page's next cursor goes on
//	after=C          start after the object of cursor C (a page's next)
//	waitRev=R        block until the result may have changed after the
//	wait=30s         table's revision R, or for wait (default and most:
//	                 Options.MaxWait)

// readRequest is a parsed read.
type readRequest struct {
	q       strata.AnyQuery
	limit   int // 0: no limit
	waitRev strata.Revision
	wait    time.Duration
	block   bool // waitRev was given
}

var readParams = map[string]bool{
	"index": true, "key": true, "prefix": true, "lowerbound": true, "from": true, "to": true,
	"raw": true, "limit": true, "after": true, "waitRev": true, "wait": true,
}

// parseRead reads the query of a read of t. With single (the object
// endpoint) only index and key select, and key is required.
func (h *Handler) parseRead(vals url.Values, t strata.AnyTable, single bool) (readRequest, error) {
	var req readRequest
	for name := range vals {
		if !readParams[name] || single && (name == "prefix" || name == "lowerbound" || name == "from" || name == "to" || name == "limit" || name == "after") {
			return req, fmt.Errorf("%w: unknown query parameter %q", ErrBadRequest, name)
		}
		if len(vals[name]) > 1 {
			return req, fmt.Errorf("%w: query parameter %q given %d times", ErrBadRequest, name, len(vals[name]))
		}
	}
	req.q.Index = vals.Get("index")
	if req.q.Index != "" {
		// An unknown index fails before any key is parsed.
		if !slices.ContainsFunc(t.Indexes(), func(ix strata.IndexInfo) bool { return ix.Name == req.q.Index }) {
			return req, fmt.Errorf("table %q: index %q: %w", t.Name(), req.q.Index, strata.ErrIndexNotFound)
		}
	}
	raw := false
	if vals.Has("raw") {
		b, err := strconv.ParseBool(vals.Get("raw"))
		if err != nil {
			return req, fmt.Errorf("%w: raw=%q: want a boolean", ErrBadRequest, vals.Get("raw"))
		}
		raw = b
	}
	key := func(param string) (index.Key, error) {
		s := vals.Get(param)
		if raw {
			k, err := decodeBase64(s)
			if err != nil {
				return nil, fmt.Errorf("%w: %s=%q: not base64url: %v", ErrBadRequest, param, s, err)
			}
			return k, nil
		}
		return t.ParseKey(req.q.Index, s)
	}

	var ops []string
	for _, p := range []string{"key", "prefix", "lowerbound", "from"} {
		if vals.Has(p) {
			ops = append(ops, p)
		}
	}
	switch {
	case len(ops) > 1:
		return req, fmt.Errorf("%w: %s: give one of key, prefix, lowerbound and from", ErrBadRequest, strings.Join(ops, " and "))
	case vals.Has("from") != vals.Has("to"):
		return req, fmt.Errorf("%w: a range needs both from and to", ErrBadRequest)
	case single && len(ops) == 0:
		return req, fmt.Errorf("%w: key is required", ErrBadRequest)
	}
	var err error
	if len(ops) == 1 {
		switch ops[0] {
		case "key":
			req.q.Op = strata.QueryList
		case "prefix":
			req.q.Op = strata.QueryPrefix
		case "lowerbound":
			req.q.Op = strata.QueryLowerBound
		case "from":
			req.q.Op = strata.QueryRange
			if req.q.To, err = key("to"); err != nil {
				return req, err
			}
		}
		if req.q.Key, err = key(ops[0]); err != nil {
			return req, err
		}
	}

	if vals.Has("limit") {
		n, err := strconv.Atoi(vals.Get("limit"))
		if err != nil || n <= 0 {
			return req, fmt.Errorf("%w: limit=%q: want a positive integer", ErrBadRequest, vals.Get("limit"))
		}
		req.limit = n
	}
	if vals.Has("after") {
		c, err := decodeBase64(vals.Get("after"))
		if err != nil || len(c) == 0 {
			return req, fmt.Errorf("%w: after=%q: not a cursor", ErrBadRequest, vals.Get("after"))
		}
		req.q.After = c
	}
	return req, h.parseWait(vals, &req)
}

// parseWait reads waitRev and wait.
func (h *Handler) parseWait(vals url.Values, req *readRequest) error {
	if vals.Has("wait") && !vals.Has("waitRev") {
		return fmt.Errorf("%w: wait needs waitRev", ErrBadRequest)
	}
	if !vals.Has("waitRev") {
		return nil
	}
	rev, err := strconv.ParseUint(vals.Get("waitRev"), 10, 64)
	if err != nil {
		return fmt.Errorf("%w: waitRev=%q: want a revision", ErrBadRequest, vals.Get("waitRev"))
	}
	req.waitRev, req.block, req.wait = rev, true, h.opts.MaxWait
	if vals.Has("wait") {
		d, err := parseWaitDuration(vals.Get("wait"))
		if err != nil {
			return err
		}
		req.wait = min(d, h.opts.MaxWait)
	}
	return nil
}

// parseWaitDuration reads a duration as time.ParseDuration does, or a
// bare number of seconds.
func parseWaitDuration(s string) (time.Duration, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: wait=%q: want a duration such as 30s", ErrBadRequest, s)
	}
	return d, nil
}

// decodeBase64 decodes base64url, with or without padding.
func decodeBase64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// encodeBase64 encodes base64url without padding, as raw keys and cursors
// travel.
func encodeBase64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// parseQuery parses a request's query string as url.ParseQuery does, and
// is where every endpoint's parameters come from. Unlike r.URL.Query(),
// which drops a pair ParseQuery cannot decode (so that ?key=h0%zz would
// read the whole table, and a mangled after= cursor would start again at
// the first page), a malformed pair is an error; and unlike ParseQuery's,
// whose message names no parameter, the error (ErrBadRequest) names the
// parameter of the pair: its name as sent, if the name is what is
// malformed.
func parseQuery(raw string) (url.Values, error) {
	vals := url.Values{}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil {
			return nil, fmt.Errorf("%w: query parameter %q: malformed name: %v", ErrBadRequest, rawName, err)
		}
		if strings.Contains(pair, ";") {
			// ParseQuery refuses semicolons, which were once separators.
			name, _, _ = strings.Cut(name, ";")
			return nil, fmt.Errorf("%w: query parameter %q: %q: a semicolon is not a separator; escape it as %%3B", ErrBadRequest, name, pair)
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			return nil, fmt.Errorf("%w: query parameter %q: malformed value %q: %v", ErrBadRequest, name, rawValue, err)
		}
		vals[name] = append(vals[name], value)
	}
	return vals, nil
}
