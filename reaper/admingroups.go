package reaper

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/reapergw/reaper/internal/httpjson"
)

// Groups in the admin API: their views (GET /api/groups, /api/groups/{id}), and
// the operators' actions on a group id (wake, sleep, hold, release: the app
// routes take a group's id and act on each member). Engine.WakeFor
// (wakefor.go) is the one call that wakes an app or a group by id.

// GroupView is a group as the admin API shows it.
type GroupView struct {
	GroupID string `json:"group_id"`
	// Apps are the members in start order; they stop in the reverse order.
	Apps []string `json:"apps"`
	// Status sums the members up: their status when they all share it,
	// "Mixed" otherwise.
	Status string `json:"status"`
	// InUse: a member is waking, or awake and not idle by the group's clock;
	// Why names it.
	InUse bool   `json:"in_use"`
	Why   string `json:"why,omitempty"`
	// GracePeriod is the group's: the longest of its members'.
	GracePeriod string `json:"grace_period"`
	// SleepAt is when the group goes to sleep if nothing happens.
	SleepAt *time.Time `json:"sleep_at"`
	// NextToSleep is the member that stops next.
	NextToSleep string    `json:"next_to_sleep,omitempty"`
	Members     []AppView `json:"members"`
}

// GroupStatusMixed is a group's status when its members differ.
const GroupStatusMixed = "Mixed"

// GroupActionAnswer answers an action on a group id: each member's answer, in
// the order they were asked (start order; reverse for a sleep).
type GroupActionAnswer struct {
	GroupID string              `json:"group_id"`
	Members []GroupMemberAnswer `json:"members"`
}

// GroupMemberAnswer is one member's answer to a group's action: the HTTP
// status it would have had alone, and its answer (the app's action's type) or
// its error.
type GroupMemberAnswer struct {
	AppID  string          `json:"app_id"`
	Code   int             `json:"code"`
	Answer json.RawMessage `json:"answer,omitempty"`
	Error  string          `json:"error,omitempty"`
}

func (a *AdminAPI) groupRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/groups", a.listGroups)
	mux.HandleFunc("GET /api/groups/{id}", a.getGroup)
}

func (a *AdminAPI) listGroups(w http.ResponseWriter, r *http.Request) {
	out := []GroupView{}
	groups := a.Engine.Groups()
	if len(groups) > 0 {
		views, err := a.views(r.Context(), "") // once for every group
		if err != nil {
			httpjson.Error(w, http.StatusServiceUnavailable, "the store cannot be read: "+err.Error())
			return
		}
		for _, g := range groups {
			out = append(out, a.groupViewOf(g, views))
		}
	}
	httpjson.Write(w, http.StatusOK, out)
}

func (a *AdminAPI) getGroup(w http.ResponseWriter, r *http.Request) {
	g, ok := a.Engine.Group(r.PathValue("id"))
	if !ok {
		httpjson.Error(w, http.StatusNotFound, "no group "+strconv.Quote(r.PathValue("id")))
		return
	}
	v, err := a.groupView(r.Context(), g)
	if err != nil {
		httpjson.Error(w, http.StatusServiceUnavailable, "the store cannot be read: "+err.Error())
		return
	}
	httpjson.Write(w, http.StatusOK, v)
}

// groupView builds a group's view: its members' views, and what DecideGroup
// says of them now (groupViewOf).
func (a *AdminAPI) groupView(ctx context.Context, g Group) (GroupView, error) {
	views, err := a.views(ctx, "")
	if err != nil {
		return GroupView{}, err
	}
	return a.groupViewOf(g, views), nil
}

// groupViewOf builds a group's view from the views of the apps.
func (a *AdminAPI) groupViewOf(g Group, views []AppView) GroupView {
	order := a.Engine.StartOrder(g)
	v := GroupView{GroupID: g.ID, Apps: order}
	for _, id := range order {
		i := slices.IndexFunc(views, func(v AppView) bool { return v.AppID == id })
		if i < 0 {
			v.Members = append(v.Members, AppView{AppID: id, Status: StatusWaitingForInit, Routes: []string{}, Managed: true, Group: g.ID})
			continue
		}
		v.Members = append(v.Members, views[i])
	}
	st := a.groupState(g, func(id string) (time.Time, int) {
		for _, m := range v.Members {
			if m.AppID == id && m.LastAccess != nil {
				return *m.LastAccess, m.InFlight
			}
		}
		return time.Time{}, 0
	}, time.Now())
	v.InUse, v.Why, v.NextToSleep, v.SleepAt = st.InUse, st.Why, st.NextToSleep, ptime(st.SleepAt)
	v.GracePeriod = st.Grace.String()
	v.Status = groupStatus(v.Members)
	return v
}

// groupState is DecideGroup over the group's members as this node knows
// them, with their traffic as traffic gives it (last access, open requests).
func (a *AdminAPI) groupState(g Group, traffic func(id string) (time.Time, int), now time.Time) GroupState {
	policies := map[string]Policy{}
	for _, m := range a.Engine.Managed() {
		policies[m.App.ID] = m.Policy
	}
	members := map[string]Member{}
	for _, id := range g.Apps {
		if rec, ok := a.Engine.Record(id); ok {
			la, open := traffic(id)
			members[id] = Member{Rec: rec, In: Input{LastAccess: la, Busy: open > 0}, Policy: policies[id]}
		}
	}
	return DecideGroup(a.Engine.StartOrder(g), members, now)
}

// withGroups names each member's group in its view, and gives an awake
// member its group's time to sleep as its reap_at: it sleeps with the group.
func (a *AdminAPI) withGroups(views []AppView, access map[string]time.Time, open map[string]int) {
	now := time.Now()
	for _, g := range a.Engine.Groups() {
		var st *GroupState
		for i := range views {
			v := &views[i]
			if !slices.Contains(g.Apps, v.AppID) {
				continue
			}
			v.Group = g.ID
			if v.Status != StatusUp {
				continue
			}
			if st == nil {
				s := a.groupState(g, func(id string) (time.Time, int) {
					la, _ := a.Engine.LocalTraffic(id)
					return latest(la, access[id]), open[id]
				}, now)
				st = &s
			}
			v.ReapAt = ptime(st.SleepAt)
		}
	}
}

func groupStatus(members []AppView) string {
	if len(members) == 0 {
		return GroupStatusMixed
	}
	s := members[0].Status
	for _, m := range members[1:] {
		if m.Status != s {
			return GroupStatusMixed
		}
	}
	return string(s)
}

// orGroup serves an action on an app id, or, when the id is a group's, the
// same action on each member (in start order; a sleep in reverse order, which
// the job keeps when it stops them). A group's sleep is refused as a whole when
// a member would refuse it for a reason other than being asleep already: a
// group sleeps together or not at all.
func (a *AdminAPI) orGroup(action string, single http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		g, ok := a.Engine.Group(r.PathValue("id"))
		if !ok {
			single(w, r)
			return
		}
		raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4096))
		if err != nil {
			httpjson.Error(w, http.StatusBadRequest, "the body is larger than 4 KiB")
			return
		}
		order := a.Engine.StartOrder(g)
		if action == "sleep" {
			slices.Reverse(order)
			if no := a.groupSleepRefusal(r, order); no != "" {
				httpjson.Error(w, http.StatusConflict, no)
				return
			}
		}
		ans := GroupActionAnswer{GroupID: g.ID}
		code := 0
		for _, id := range order {
			m := a.memberAction(single, r, raw, id)
			ans.Members = append(ans.Members, m)
			if m.Code < 300 && (code == 0 || code >= 300) {
				code = m.Code
			} else if code == 0 {
				code = m.Code
			}
		}
		httpjson.Write(w, code, ans)
	}
}

// memberAction runs the app's action for one member, with the group's body,
// and returns its answer.
func (a *AdminAPI) memberAction(single http.HandlerFunc, r *http.Request, raw []byte, id string) GroupMemberAnswer {
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(raw))
	r2.ContentLength = int64(len(raw))
	r2.SetPathValue("id", id)
	rec := &answerRecorder{header: http.Header{}, code: http.StatusOK}
	single(rec, r2)
	m := GroupMemberAnswer{AppID: id, Code: rec.code}
	body := bytes.TrimSpace(rec.body.Bytes())
	if rec.code >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			m.Error = e.Error
		} else {
			m.Error = string(body)
		}
		return m
	}
	m.Answer = json.RawMessage(body)
	return m
}

// groupSleepRefusal says why the group cannot be put to sleep now ("" when
// it can): the first member that would refuse for another reason than being
// asleep already (or not yet observed).
func (a *AdminAPI) groupSleepRefusal(r *http.Request, order []string) string {
	force, _ := strconv.ParseBool(r.URL.Query().Get("force"))
	settings, err := a.Store.Settings(r.Context())
	if err != nil {
		return "the store cannot be read: " + err.Error()
	}
	open, err := a.Engine.OpenEverywhere(r.Context())
	if err != nil {
		return "the store cannot be read: " + err.Error()
	}
	policies := map[string]Policy{}
	for _, m := range a.Engine.Managed() {
		policies[m.App.ID] = m.Policy
	}
	now := time.Now()
	for _, id := range order {
		rec, ok := a.Engine.Record(id)
		if !ok || rec.Status == StatusDown || rec.Status == StatusWaitingForShutdown || rec.Status == StatusWaitingForInit {
			continue
		}
		if no := sleepRefusal(rec, settings, policies[id], open[id], force, now); no != nil {
			return id + ": " + no.msg
		}
	}
	return ""
}

// answerRecorder keeps what a member's action answered.
type answerRecorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
	wrote  bool
}

func (r *answerRecorder) Header() http.Header { return r.header }

func (r *answerRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
}

func (r *answerRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	if r.body.Len()+len(b) > 64<<10 { // an action's answer is small: bounded all the same
		return len(b), nil
	}
	return r.body.Write(b)
}
