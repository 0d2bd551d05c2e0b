package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/strata-db/strata/httpapi"
)

// Client is a client of a server that serves a database with package
// httpapi. It is safe for concurrent use.
type Client struct {
	base   *url.URL // ends with "/"
	hc     *http.Client
	header http.Header
	logger *slog.Logger
	// minBackoff and maxBackoff bound the waits between reconnects of a
	// change stream.
	minBackoff, maxBackoff time.Duration
	// hook, if not nil, is called at each hold point (hold.go). Tests
	// set it before the client is used.
	hook func(hold)
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send its requests with hc (for TLS
// settings, client certificates, a proxy). hc's Timeout must be zero:
// change streams and blocking reads last long. With a unix socket address
// the client's own transport is used instead.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithHeader adds a header to every request (an Authorization token for
// the server's Options.Authorize, say).
func WithHeader(key, value string) Option { return func(c *Client) { c.header.Add(key, value) } }

// WithLogger makes the client log the reconnects of its change streams to
// l. The default is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(c *Client) { c.logger = l } }

// WithBackoff bounds the waits between the reconnects of a change stream:
// from min, doubling (with jitter) up to max. The default is 100ms to 5s.
func WithBackoff(min, max time.Duration) Option {
	return func(c *Client) { c.minBackoff, c.maxBackoff = min, max }
}

// SocketPath reports whether addr names a unix socket, and returns its
// path: "unix:" followed by the path ("unix:/run/app.sock", or a relative
// "unix:app.sock"), or the URL form "unix://" followed by the path
// ("unix:///run/app.sock"), so that an address a server prints in either
// form is one a client takes. The path is "" for "unix:" or "unix://"
// alone.
func SocketPath(addr string) (path string, ok bool) {
	path, ok = strings.CutPrefix(addr, "unix:")
	if !ok {
		return "", false
	}
	if rest, url := strings.CutPrefix(path, "//"); url {
		path = rest
	}
	return path, true
}

// New returns a client of the server at addr: "http://host:port" or
// "https://host:port", whose path, if any, is where the application
// mounted the handler ("http://host:8080/debug/strata"); or a unix socket
// in either form SocketPath reads ("unix:///path/to/socket" or
// "unix:/path/to/socket"), for a server on a unix socket with the handler
// at the root. New does not connect.
func New(addr string, opts ...Option) (*Client, error) {
	c := &Client{header: http.Header{}, hc: http.DefaultClient, logger: slog.Default(),
		minBackoff: 100 * time.Millisecond, maxBackoff: 5 * time.Second}
	for _, opt := range opts {
		opt(c)
	}
	if path, ok := SocketPath(addr); ok {
		if path == "" {
			return nil, fmt.Errorf("address %q: %w: no socket path", addr, ErrAddress)
		}
		c.base = &url.URL{Scheme: "http", Host: "strata", Path: "/"}
		c.hc = &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", path)
			},
		}}
		return c, nil
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w: %v", addr, ErrAddress, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("address %q: %w: want http://, https:// or unix://", addr, ErrAddress)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	u.RawQuery, u.Fragment = "", ""
	c.base = u
	return c, nil
}

// CloseIdleConnections closes the connections the client keeps open for
// its next requests (http.Client.CloseIdleConnections), so that a client
// done with its server leaves no connection and no goroutine behind. With
// WithHTTPClient, those of the given client's transport are closed, which
// other users of that client may share. The client stays usable: a later
// request dials again.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// endpoint returns the URL of the API path (below /v1/) with query.
func (c *Client) endpoint(path string, query url.Values) string {
	u := *c.base
	u.Path += "v1/" + path
	u.RawQuery = query.Encode()
	return u.String()
}

// request sends a request and returns its response if its status is 200;
// otherwise the response's problem as an *Error, or ErrUnreachable.
func (c *Client) request(ctx context.Context, method, path string, query url.Values, body io.Reader, header ...string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.endpoint(path, query), body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAddress, err)
	}
	for k, vs := range c.header {
		req.Header[k] = append([]string(nil), vs...)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, problemError(resp)
	}
	return resp, nil
}

// getJSON decodes the JSON document of a GET into v.
func (c *Client) getJSON(ctx context.Context, path string, query url.Values, v any) (*http.Response, error) {
	resp, err := c.request(ctx, http.MethodGet, path, query, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return nil, c.readError(ctx, path, err)
	}
	return resp, nil
}

// readError describes a failure to read a response's body.
func (c *Client) readError(ctx context.Context, path string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &typ) {
		return fmt.Errorf("%s: %w: %v", path, ErrProtocol, err)
	}
	return fmt.Errorf("%s: %w: %w", path, ErrUnreachable, err)
}

// Summary returns the server's summary of the database.
func (c *Client) Summary(ctx context.Context) (httpapi.Summary, error) {
	var s httpapi.Summary
	_, err := c.getJSON(ctx, "", nil, &s)
	return s, err
}

// Tables describes the database's tables.
func (c *Client) Tables(ctx context.Context) ([]httpapi.TableInfo, error) {
	var ts []httpapi.TableInfo
	_, err := c.getJSON(ctx, "tables", nil, &ts)
	return ts, err
}

// Table describes one table. The error wraps strata.ErrTableNotFound if
// there is none of that name.
func (c *Client) Table(ctx context.Context, name string) (httpapi.TableInfo, error) {
	var t httpapi.TableInfo
	_, err := c.getJSON(ctx, "tables/"+url.PathEscape(name), nil, &t)
	return t, err
}

// Cluster returns the replication cluster the server's database belongs
// to, as the server's node sees it (GET /v1/cluster): its members, the
// leader, the node's indexes, and each member's lag where the node knows
// it (httpapi.ClusterMember says where). The error wraps
// httpapi.ErrNotClusterMember for a server whose database is not a
// cluster member, and httpapi.ErrClusterUnavailable for a node that
// cannot tell now (closed, say).
func (c *Client) Cluster(ctx context.Context) (httpapi.ClusterStatus, error) {
	var st httpapi.ClusterStatus
	_, err := c.getJSON(ctx, "cluster", nil, &st)
	return st, err
}

// Dump writes the server's JSON dump of one snapshot (strata.WriteJSON)
// to w: of every table, or of those named.
func (c *Client) Dump(ctx context.Context, w io.Writer, tables ...string) error {
	return c.download(ctx, w, "dump", url.Values{"table": tables})
}

// Snapshot writes a snapshot of the database to w, in the format of the
// server's Options.Snapshot (package persist's, for a persisted database).
// It needs the snapshot access the server's Authorize must grant.
func (c *Client) Snapshot(ctx context.Context, w io.Writer) error {
	return c.download(ctx, w, "snapshot", nil)
}

func (c *Client) download(ctx context.Context, w io.Writer, path string, query url.Values) error {
	resp, err := c.request(ctx, http.MethodGet, path, query, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		// A server that failed half-way cuts the response short.
		return c.readError(ctx, path, err)
	}
	return nil
}
