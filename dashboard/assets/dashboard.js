// reaper's dashboard script. The pages work without it; it adds:
// - live updates: it reads the admin API's event stream (/api/events, with the
//   session cookie), changes a status badge the moment an app's status changes,
//   and then replaces the page's regions ([data-region]) with a fresh copy of the
//   page. If the stream drops, the browser reconnects (with Last-Event-ID) and
//   the page is read again meanwhile, every 10 s while the stream is down (and
//   every 15 s anyway, for what changes without an event: held requests);
// - a dialog that confirms each action, which is then posted in the background
//   (its outcome shows in the page, which stays where it is);
// - the filter of the apps table as you type, and relative times that tick.
(function () {
	"use strict";
	var doc = document, body = doc.body;
	var csrf = body.getAttribute("data-csrf") || "";
	var pageApp = body.getAttribute("data-app") || "";
	var renderedAt = Date.parse(body.getAttribute("data-now") || "") || Date.now();
	doc.documentElement.classList.add("js");

	var classes = {Up: "up", Down: "down", WaitingForUp: "waking", WaitingForShutdown: "sleeping", Error: "error"};
	function $(sel, root) { return (root || doc).querySelector(sel); }
	function $$(sel, root) { return Array.prototype.slice.call((root || doc).querySelectorAll(sel)); }

	// Relative times, by the rules of the server (format.go rel, until and span).
	function two(a, ua, b, ub) { return b === 0 ? a + " " + ua : a + " " + ua + " " + b + " " + ub; }
	function span(s) {
		s = Math.floor(s);
		if (s < 60) return s + " s";
		if (s < 3600) return two(Math.floor(s / 60), "min", s % 60, "s");
		if (s < 86400) return two(Math.floor(s / 3600), "h", Math.floor(s % 3600 / 60), "min");
		return two(Math.floor(s / 86400), "d", Math.floor(s % 86400 / 3600), "h");
	}
	function rel(t) {
		var d = (t - Date.now()) / 1000;
		if (d > -1 && d < 1) return "just now";
		return d < 0 ? span(-d) + " ago" : "in " + span(d);
	}
	function tick() {
		$$("time[data-rel]").forEach(function (el) {
			var t = Date.parse(el.getAttribute("datetime"));
			if (isNaN(t)) return;
			// A countdown (data-rel="until") that ran out says the moment has come.
			el.textContent = el.getAttribute("data-rel") === "until" && t <= Date.now() ? "any moment" : rel(t);
		});
	}
	setInterval(tick, 1000);

	// Messages: the outcome of an action, and what screen readers hear.
	function say(msg, kind) {
		var box = $("#toast");
		if (!box) return;
		var p = doc.createElement("p");
		p.className = "flash " + kind;
		p.textContent = msg;
		box.replaceChildren(p);
	}
	function announce(msg) {
		var a = $("#announce");
		if (a) a.textContent = msg;
	}

	// Status badges change at once; the rest follows with the refresh.
	function setBadge(scope, status) {
		var b = scope && $("[data-badge]", scope);
		if (!b) return;
		b.className = "badge " + (classes[status] || "init");
		$(".bt", b).textContent = status;
	}

	// refresh reads the page again and swaps its regions; one at a time, and
	// once more if asked meanwhile.
	var busy = false, again = false, timer = 0;
	function refresh() {
		clearTimeout(timer);
		timer = setTimeout(load, 200);
	}
	function load() {
		if (busy) { again = true; return; }
		busy = true;
		fetch(location.href, {headers: {"Accept": "text/html"}, cache: "no-store", credentials: "same-origin"})
			.then(function (r) {
				if (r.redirected && new URL(r.url).pathname === "/login") { location.reload(); return null; }
				return r.ok ? r.text() : null;
			})
			.then(function (html) { if (html) swap(new DOMParser().parseFromString(html, "text/html")); })
			.catch(function () { /* the next event or poll tries again */ })
			.then(function () {
				busy = false;
				if (again) { again = false; refresh(); }
			});
	}
	function swap(fresh) {
		$$("[data-region][id]").forEach(function (old) {
			var now = fresh.getElementById(old.id);
			if (!now) return;
			// A group opened on its members stays open.
			var open = $$("details[data-group-id][open]", old).map(function (d) { return d.getAttribute("data-group-id"); });
			var node = doc.importNode(now, true);
			$$("details[data-group-id]", node).forEach(function (d) { if (open.indexOf(d.getAttribute("data-group-id")) >= 0) d.open = true; });
			old.replaceWith(node);
		});
		filter();
		tick();
	}

	// The event stream.
	var live = $("#live"), liveText = $("#live-t"), es = null, poll = 0;
	function setLive(state, text) {
		if (!live) return;
		live.hidden = false;
		live.setAttribute("data-state", state);
		liveText.textContent = text;
	}
	function onEvent(e) {
		var ev;
		try { ev = JSON.parse(e.data); } catch (err) { return; }
		if (pageApp && ev.app_id !== pageApp) return;
		// The stream starts with the node's recent events; the page shows those already.
		if (Date.parse(ev.at) < renderedAt) return;
		if (ev.type === "status") {
			var row = $('tr[data-app="' + CSS.escape(ev.app_id) + '"]');
			setBadge(row, ev.to);
			if (row) { row.classList.remove("flash-row"); void row.offsetWidth; row.classList.add("flash-row"); }
			if (pageApp) setBadge($("#r-head"), ev.to);
			announce(ev.app_id + " is now " + ev.to);
		}
		refresh();
	}
	function connect() {
		if (!window.EventSource || !live) return;
		es = new EventSource("/api/events");
		es.onopen = function () {
			setLive("on", "live");
			if (poll) { clearInterval(poll); poll = 0; refresh(); }
		};
		es.onerror = function () {
			setLive("retry", "reconnecting…");
			if (!poll) { refresh(); poll = setInterval(refresh, 10000); }
			if (es.readyState === EventSource.CLOSED) {
				// Refused (signed out, too many streams): the browser gave up; try again later.
				setTimeout(connect, 15000);
			}
		};
		["status", "hold", "release", "sleep", "wake_ask", "wake"].forEach(function (t) {
			es.addEventListener(t, onEvent);
		});
	}
	connect();
	// Some things change without an event (held requests, last access): read
	// the page again now and then while it is in view.
	setInterval(function () { if (!doc.hidden) refresh(); }, 15000);

	// Actions: confirmed in a dialog, then posted in the background.
	function ask(question, detail) {
		var dlg = $("#confirm");
		if (!dlg || !dlg.showModal) return Promise.resolve(window.confirm(question + "\n\n" + detail));
		$("#confirm-q").textContent = question;
		$("#confirm-d").textContent = detail;
		dlg.returnValue = "";
		dlg.showModal();
		$("#confirm-ok").focus();
		return new Promise(function (resolve) {
			dlg.addEventListener("close", function () { resolve(dlg.returnValue === "ok"); }, {once: true});
		});
	}
	function question(form) {
		var q = form.getAttribute("data-confirm"), sel = $("select[name=duration]", form);
		if (sel) q = q.replace("{duration}", sel.options[sel.selectedIndex].text.replace(/^for /, ""));
		var force = $("input[name=force]", form);
		if (force && force.checked) q = q.replace(/\?$/, ", even if held, in Error or stuck?");
		return q;
	}
	function send(form) {
		var data = new URLSearchParams(new FormData(form));
		data.set("confirm", "yes");
		var buttons = $$("button", form);
		buttons.forEach(function (b) { b.disabled = true; });
		fetch(form.action, {
			method: "POST", body: data, credentials: "same-origin",
			headers: {"Accept": "application/json", "X-CSRF-Token": csrf}
		}).then(function (r) {
			return r.json().then(function (j) { return {ok: r.ok, j: j}; });
		}).then(function (res) {
			say(res.ok ? res.j.message : res.j.error, res.ok ? "ok" : "error");
			refresh();
		}, function () {
			say("The dashboard could not be reached; try again.", "error");
		}).then(function () {
			buttons.forEach(function (b) { b.disabled = false; });
		});
	}
	doc.addEventListener("submit", function (e) {
		var form = e.target;
		if (!form.matches || !form.matches("form[data-confirm]")) return;
		e.preventDefault();
		ask(question(form), form.getAttribute("data-detail") || "").then(function (ok) { if (ok) send(form); });
	});

	// The filter of the apps table, as you type; the URL keeps it for reloads.
	var fq = $("#f-q"), fs = $("#f-status");
	function filter() {
		if (!fq) return;
		var words = fq.value.toLowerCase().split(/\s+/).filter(Boolean), group = fs.value, shown = 0;
		var rows = $$("tr[data-app]");
		rows.forEach(function (tr) {
			var text = tr.getAttribute("data-search") || "";
			var ok = (!group || tr.getAttribute("data-group") === group) &&
				words.every(function (w) { return text.indexOf(w) >= 0; });
			tr.hidden = !ok;
			if (ok) shown++;
		});
		var none = $("#no-match");
		if (none) none.hidden = shown > 0 || rows.length === 0;
	}
	function filterChanged() {
		var u = new URL(location.href);
		[["q", fq.value.trim()], ["status", fs.value]].forEach(function (kv) {
			if (kv[1]) u.searchParams.set(kv[0], kv[1]); else u.searchParams.delete(kv[0]);
		});
		history.replaceState(null, "", u);
		filter();
		refresh(); // rows the server left out come back
	}
	if (fq) {
		fq.addEventListener("input", filterChanged);
		fs.addEventListener("change", filterChanged);
	}
})();
