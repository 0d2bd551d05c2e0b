package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/strata-db/strata/httpapi"
)

// Errors of the client. Errors the server reports are *Error values, which
// also match the error value the server met: errors.Is(err,
// strata.ErrTableNotFound) holds for a table that is not there.
var (
	// ErrAddress: the server's address is not one New accepts.
	ErrAddress = errors.New("invalid server address")
	// ErrUnreachable: the server could not be reached, or the connection
	// broke before a response was read.
	ErrUnreachable = errors.New("server unreachable")
	// ErrProtocol: the server's response is not what the API serves.
	ErrProtocol = errors.New("unexpected response")
	// ErrObject: an object could not be decoded into the table's type,
	// or the server could not encode it.
	ErrObject = errors.New("object not decodable")
)

// Error is an error the server reported: its status and problem document.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Problem is the server's problem document.
	Problem httpapi.Problem
}

// Error returns the problem's detail.
func (e *Error) Error() string {
	if e.Problem.Detail != "" {
		return e.Problem.Detail
	}
	return fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
}

// Unwrap returns the error value the problem names (httpapi.ErrorByName),
// if the client knows it.
func (e *Error) Unwrap() error { return httpapi.ErrorByName(e.Problem.Error) }

// problemError reads the problem document of a response that is not 200.
func problemError(resp *http.Response) error {
	e := &Error{Status: resp.StatusCode}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err := json.Unmarshal(body, &e.Problem); err != nil || e.Problem.Status == 0 {
		// Not one of the API's: a proxy's page, say.
		e.Problem = httpapi.Problem{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode), Detail: fmt.Sprintf("%s: %.200s", resp.Status, body)}
	}
	return e
}

// status returns the HTTP status of a server's error, 0 for others.
func status(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}
