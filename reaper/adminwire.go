package reaper

// The admin API's requests and answers as they go on the wire, for the server
// (admin*.go, savings.go) and its clients (package adminapi, which the CLI and
// the dashboard use) alike. The pages' own views are declared beside what
// builds them: AppView (admin.go), WakeView (adminwatch.go), AwakeReport
// (awake.go), PrewakeView (prewakejob.go), SavingsView and SavingsTotal
// (savings.go), Settings (store.go), Event (events.go). The fields of the
// answers that were once maps are in the order of their JSON names, so that the
// bytes on the wire stayed the same.

// AdminPrefixes are the paths under which AdminAPI.Handler serves (the
// patterns of an http.ServeMux): the admin listener mounts the handler on
// these, so a route added to Handler outside them fails its test, not a user.
var AdminPrefixes = []string{"/api/apps", "/api/apps/", "/api/groups", "/api/groups/", "/api/settings", "/api/events", "/api/savings", "/api/tcp_routes"}

// ActionRequest is the optional JSON body of an action (POST _wake, _sleep,
// _hold, _reset; DELETE _hold): who does it, and for a hold how long and why.
// An empty one is the same as none.
type ActionRequest struct {
	By       string `json:"by,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Duration string `json:"duration,omitempty"`
}

// HistoryPage answers GET /api/apps/{id}/history: a page of the app's
// transitions, newest first, out of Total.
type HistoryPage struct {
	Items    []Transition `json:"items"`
	Page     int          `json:"page"`
	PageSize int          `json:"page_size"`
	Total    int          `json:"total"`
}

// WakesAnswer answers GET /api/apps/{id}/wakes: its recent wakes, newest first.
type WakesAnswer struct {
	AppID string     `json:"app_id"`
	Wakes []WakeView `json:"wakes"`
}

// WakeAnswer answers POST /api/apps/{id}/_wake (202): the ask is made; Status
// is the app's when it was asked.
type WakeAnswer struct {
	AppID  string `json:"app_id"`
	Asked  bool   `json:"asked"`
	Status Status `json:"status"`
}

// SleepAnswer answers POST /api/apps/{id}/_sleep (202) and _reap (200): the
// app goes to sleep once its Open requests and connections end.
type SleepAnswer struct {
	AppID      string    `json:"app_id"`
	Open       int       `json:"open"`
	SleepAsked *SleepAsk `json:"sleep_asked"`
	Status     Status    `json:"status"`
}

// HoldAnswer answers POST /api/apps/{id}/_hold: the hold now in force.
type HoldAnswer struct {
	AppID  string    `json:"app_id"`
	Hold   *KeepWarm `json:"hold"`
	Status Status    `json:"status"`
}

// ReleaseAnswer answers DELETE /api/apps/{id}/_hold: Released with the ended
// Hold and the app's Status, or not Released and the Reason (no active hold).
type ReleaseAnswer struct {
	AppID    string    `json:"app_id"`
	Hold     *KeepWarm `json:"hold,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Released bool      `json:"released"`
	Status   Status    `json:"status,omitempty"`
}

// ResetAnswer answers POST /api/apps/{id}/_reset: the app's status after it.
type ResetAnswer struct {
	AppID  string `json:"app_id"`
	Status Status `json:"status"`
}

// SavingsAnswer answers GET /api/savings: every managed app's savings and
// their total. (GET /api/apps/{id}/savings answers one SavingsView.)
type SavingsAnswer struct {
	Apps  []SavingsView `json:"apps"`
	Total SavingsTotal  `json:"total"`
}
