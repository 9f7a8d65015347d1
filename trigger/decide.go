package trigger

import (
	"strconv"
	"time"
)

// The decisions of the loops, pure: they take now and are table-tested.

// nextCheck is when a polling trigger looks again, after a look at last that
// ended in failures failures in a row: every after a success, and after a
// failure the back-off, never sooner than every (a failing source is not
// hammered faster than a working one is polled).
func nextCheck(last time.Time, every time.Duration, failures int) time.Time {
	return last.Add(max(every, backoff(failures)))
}

// Bounds of the back-off after failures: of a failing poll, and of a lost
// LISTEN connection.
const (
	backoffMin = time.Second
	backoffMax = 5 * time.Minute
)

// backoff is the wait after failures failures in a row: 0 after none, then 1 s,
// 2 s, 4 s… up to backoffMax.
func backoff(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	if failures > 20 { // 2^20 s is far past backoffMax: no overflow
		return backoffMax
	}
	return min(backoffMin<<(failures-1), backoffMax)
}

// dueBound is the highest score a redis_due member may have to be due at now
// with lead: ZRANGEBYSCORE -inf <dueBound> LIMIT 0 1 finds one. A score is in
// Unix seconds, perhaps with a fraction.
func dueBound(now time.Time, lead time.Duration) string {
	at := now.Add(lead)
	return strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)
}

// logChange reports whether a look's error (empty: it worked) is worth a line
// in the log, given the previous look's: once when a source starts failing,
// once when it works again; not at every poll, nor when the failure's words
// change (a server that goes down answers EOF, then "connection refused"):
// the admin API and the dashboard show the last error.
func logChange(prev, cur string) bool {
	return (prev == "") != (cur == "")
}
