package clevercloud

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// UpgradeHeader is the header Clever Cloud's edge sets on the 404 it answers in
// place of an app that has no instance running.
const UpgradeHeader = "X-CleverCloudUpgrade"

// IsNotReadyYet reports whether resp is Clever Cloud's own answer for an app with
// no instance yet (404 with X-CleverCloudUpgrade: true), as opposed to the app's
// answer: while an app wakes up its domain answers that, and a gateway must treat
// it as "not ready yet", never pass it on as the app's 404. A nil resp is false.
func IsNotReadyYet(resp *http.Response) bool {
	return resp != nil && resp.StatusCode == http.StatusNotFound &&
		strings.EqualFold(strings.TrimSpace(resp.Header.Get(UpgradeHeader)), "true")
}

// GuessAppID returns the app id that Clever Cloud's default domain names:
// app-<uuid>.cleverapps.io → app_<uuid>. host may carry a port, a trailing dot, any
// case, or be a whole URL (a backend target). ok is false for any other host.
func GuessAppID(host string) (id string, ok bool) {
	host = strings.TrimSpace(host)
	if strings.Contains(host, "://") {
		u, err := url.Parse(host)
		if err != nil {
			return "", false
		}
		host = u.Host
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	name, ok := strings.CutSuffix(host, ".cleverapps.io")
	if !ok {
		return "", false
	}
	uuid, ok := strings.CutPrefix(name, "app-")
	if !ok || !isUUID(uuid) {
		return "", false
	}
	return "app_" + uuid, true
}

// isUUID reports whether s is 8-4-4-4-12 lower-case hex digits.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return true
}
