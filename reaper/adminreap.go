package reaper

import "net/http"

// reap is the reference's POST /api/apps/{id}/_reap: _sleep under its older
// name, answering 200 where _sleep answers 202, since the reference's clients
// check for 200. The work is the same: the sleep is asked, and the job carries
// it out (see sleep).
func (a *AdminAPI) reap(w http.ResponseWriter, r *http.Request) {
	a.sleep(acceptedAsOK{w}, r)
}

// acceptedAsOK writes 200 where its handler writes 202, and any other status
// (a refusal's 409, say) as it is.
type acceptedAsOK struct{ http.ResponseWriter }

func (w acceptedAsOK) WriteHeader(code int) {
	if code == http.StatusAccepted {
		code = http.StatusOK
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection underneath.
func (w acceptedAsOK) Unwrap() http.ResponseWriter { return w.ResponseWriter }
