package webhook

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/reapergw/reaper/reaper"
)

// typesOf returns the types of the events a transition makes: none for what
// webhooks do not announce. A slow wake is an event of its own, beside the
// change to Up (when the platform itself took longer than alertAfter) or the
// first answer (when the wake became slow only after the platform was done):
// so a wake is slow once, whichever node tells it.
func typesOf(t reaper.Transition, alertAfter time.Duration) []string {
	var out []string
	switch t.Kind {
	case "":
		typ := TypeStatus
		if t.To == reaper.StatusError {
			typ = TypeError
		}
		out = append(out, typ)
		if w := t.Phases; w != nil && alertAfter > 0 && t.To == reaper.StatusUp && upTook(w) > alertAfter {
			out = append(out, TypeSlowWake)
		}
	case reaper.EventWake:
		if w := t.Phases; w == nil || w.FirstAnswerAt.IsZero() {
			return nil // the leader's own record of the phases: the change to Up tells it
		}
		out = append(out, TypeWake)
		if w := t.Phases; alertAfter > 0 && w.Total() > alertAfter && upTook(w) <= alertAfter {
			out = append(out, TypeSlowWake)
		}
	case reaper.EventHold, reaper.EventRelease, reaper.EventHoldExpired, reaper.EventSleep, reaper.EventWakeAsk:
		out = append(out, t.Kind)
	}
	return out
}

// upTook is how long the platform took: from the ask to the app up.
func upTook(w *reaper.WakeTimes) time.Duration {
	if w.UpAt.IsZero() || w.AskedAt.IsZero() {
		return 0
	}
	return w.UpAt.Sub(w.AskedAt)
}

// wants reports whether a webhook whose filter is events takes an event of
// type typ: every type when the filter is empty; "status" takes "error" too.
func wants(events map[string]bool, typ string) bool {
	return len(events) == 0 || events[typ] || (typ == TypeError && events[TypeStatus])
}

// newEvent is the event of type typ that t makes, queued at now.
func newEvent(t reaper.Transition, typ, appName string, now time.Time) reaper.QueuedEvent {
	return reaper.QueuedEvent{ID: eventID(t, typ), Type: typ, AppName: appName, QueuedAt: now, Transition: t}
}

// eventID is a new UUIDv7, except for what several nodes may tell of one wake
// (each node records its own first answer): those get an id made from the
// app and the wake's ask, the same on every node, so that the store queues the
// event once and a receiver that sees it twice knows it is one event.
func eventID(t reaper.Transition, typ string) string {
	if (typ == TypeWake || typ == TypeSlowWake) && t.Phases != nil && !t.Phases.AskedAt.IsZero() {
		return derivedID(t.Phases.AskedAt, typ+"\x00"+t.AppID+"\x00"+strconv.FormatInt(t.Phases.AskedAt.UnixNano(), 10))
	}
	if id, err := uuid.NewV7(); err == nil {
		return id.String()
	}
	return uuid.NewString() // v4: the clock could not be read
}

// derivedID is a UUIDv7 whose time is at and whose other bits come from seed.
func derivedID(at time.Time, seed string) string {
	sum := sha256.Sum256([]byte(seed))
	var u uuid.UUID
	copy(u[:], sum[:16])
	ms := uint64(at.UnixMilli())
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6] = 0x70 | u[6]&0x0f // version 7
	u[8] = 0x80 | u[8]&0x3f // RFC 9562 variant
	return u.String()
}

// Payload is the JSON body of an event (format json).
type Payload struct {
	ID      string        `json:"id"`
	Type    string        `json:"type"`
	AppID   string        `json:"app_id"`
	AppName string        `json:"app_name,omitempty"`
	At      time.Time     `json:"at"`
	From    reaper.Status `json:"from"`
	To      reaper.Status `json:"to"`
	Cause   string        `json:"cause,omitempty"`
	By      string        `json:"by,omitempty"`
	Node    string        `json:"node,omitempty"`
	// Hold is the hold of a hold, release or hold_expired event.
	Hold *reaper.KeepWarm `json:"hold,omitempty"`
	// Wake is the wake of a wake or slow_wake event, or of a change to Up.
	Wake *Wake `json:"wake,omitempty"`
}

// Wake is a wake's phases: when each was reached, how long each took, and the
// whole.
type Wake struct {
	reaper.WakeTimes
	Phases       []reaper.PhaseDuration `json:"phases"`
	TotalSeconds float64                `json:"total_seconds"`
}

// payload is what the JSON body of ev says.
func payload(ev reaper.QueuedEvent) Payload {
	p := Payload{ID: ev.ID, Type: ev.Type, AppID: ev.AppID, AppName: ev.AppName, At: ev.At, From: ev.From, To: ev.To,
		Cause: ev.Cause, By: ev.By, Node: ev.Node, Hold: ev.Hold}
	if w := ev.Phases; w != nil {
		p.Wake = &Wake{WakeTimes: *w, Phases: w.Durations(), TotalSeconds: w.Total().Seconds()}
	}
	return p
}

// encode is the body of ev in format.
func encode(format string, ev reaper.QueuedEvent, alertAfter time.Duration) ([]byte, error) {
	if format == FormatSlack {
		return json.Marshal(map[string]string{"text": slackText(ev, alertAfter)})
	}
	return json.Marshal(payload(ev))
}

// slackText is a short line that says what happened, for a chat.
func slackText(ev reaper.QueuedEvent, alertAfter time.Duration) string {
	app := ev.AppName
	if app == "" {
		app = ev.AppID
	}
	by := func() string {
		if ev.By == "" {
			return ""
		}
		return " by " + ev.By
	}
	hold := ev.Hold
	if hold == nil {
		hold = &reaper.KeepWarm{}
	}
	reason := ""
	if hold.Reason != "" {
		reason = ": " + hold.Reason
	}
	w := ev.Phases
	if w == nil {
		w = &reaper.WakeTimes{}
	}
	switch ev.Type {
	case TypeError:
		return fmt.Sprintf("%s went to Error: %s", app, ev.Cause)
	case TypeWake:
		return fmt.Sprintf("%s woke up in %s (asked → first answer)", app, seconds(w.Total()))
	case TypeSlowWake:
		return fmt.Sprintf("%s was slow to wake: %s (asked → %s), more than alert_wake_after (%v)", app,
			seconds(w.Total()), lastPhase(w), alertAfter)
	case TypeHold:
		return fmt.Sprintf("%s held awake until %s%s%s", app, hold.Until.UTC().Format("2006-01-02 15:04 MST"), by(), reason)
	case TypeRelease:
		return fmt.Sprintf("%s's hold released%s", app, by())
	case TypeHoldExpired:
		return fmt.Sprintf("%s's hold%s ran out%s", app, by(), reason)
	case TypeSleep:
		return fmt.Sprintf("%s put to sleep%s", app, by())
	case TypeWakeAsk:
		return fmt.Sprintf("%s asked to wake%s", app, by())
	}
	text := fmt.Sprintf("%s: %s → %s (%s)", app, ev.From, ev.To, ev.Cause)
	if ev.To == reaper.StatusUp && ev.Phases != nil {
		text += fmt.Sprintf(", up %s after the ask", seconds(upTook(ev.Phases)))
	}
	return text
}

// seconds writes d as "2.3 s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
}

// lastPhase names the last phase a wake reached.
func lastPhase(w *reaper.WakeTimes) string {
	if !w.FirstAnswerAt.IsZero() {
		return "first answer"
	}
	return "platform up"
}
