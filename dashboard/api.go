package dashboard

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/reapergw/reaper/adminapi"
)

// The dashboard reads and acts through the admin API's own handler, called in
// the process by adminapi.Client over adminapi.HandlerTransport: every rule of
// the API (and, in a cluster, the forwarding of writes to the leader) applies to
// the dashboard as it does to a script.

// isNotFound tells "the API has no such endpoint or object" from a failure.
func isNotFound(err error) bool {
	return adminapi.StatusOf(err) == http.StatusNotFound
}

// errText is an error as a page shows it: the API's message (or its status's
// text), else what went wrong in the call.
func errText(err error) string {
	var ae *adminapi.Error
	if errors.As(err, &ae) {
		if ae.Message != "" {
			return ae.Message
		}
		return http.StatusText(ae.Status)
	}
	var ue *url.Error // the in-process call's URL says nothing to an operator
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
