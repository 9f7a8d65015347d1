(function (C) {
	// C: poll and errorPoll (ms), events (the live progress stream, or none), preview, retry (ms before a
	// page refused by a wake limit reloads), sec (a phase's time,
	// "{n} s"), hook (the texts of #clevercloud-reaper-status by state and status), p (the progress when
	// the page was rendered, as the stream sends it).
	var d = document.documentElement, t0 = Date.now(), es = null, timer = 0, over = false, p = C.p, base = 0;
	function $(id) { return document.getElementById(id); }
	function attr(e, name, on) { if (on) e.setAttribute(name, ""); else e.removeAttribute(name); }

	// show puts the page in a state (waiting, almost, error) and a status, and updates the hooks custom
	// pages use: the text of #clevercloud-reaper-status, the class clevercloud-reaper-error of <body>.
	function show(state, status) {
		d.setAttribute("data-state", state);
		if (status) d.setAttribute("data-status", status);
		if (document.body) document.body.classList.toggle("clevercloud-reaper-error", state === "error");
		var h = $("clevercloud-reaper-status"), k = state === "waiting" ? d.getAttribute("data-status") : state;
		if (h && C.hook[k]) h.textContent = C.hook[k];
		// The built-in page's tab title follows its heading, so a background tab tells about an error too.
		var t = document.querySelector("h1[data-reaper-title]");
		if (t) document.title = t.innerText.trim();
	}

	// The progress: the phases reached and their times, the usual boot time and a bar against it.
	function update(q) {
		p = q;
		base = q.waited_ms === undefined ? 0 : Date.now() - q.waited_ms;
		var names = ["asked", "accepted", "up", "ready"];
		for (var i = 0; i < names.length; i++) {
			var li = document.querySelector('#reaper-phases [data-phase="' + names[i] + '"]'), ms = q[names[i] + "_ms"];
			if (!li) continue;
			var done = i === 0 || ms !== undefined || (i === 1 && q.up_ms !== undefined);
			attr(li, "data-done", done);
			var t = li.querySelector(".ph-t");
			if (t) t.textContent = ms === undefined ? "" : C.sec.replace("{n}", (ms / 1000).toFixed(1));
		}
		tick();
	}
	function tick() {
		var e = $("reaper-eta"), bar = $("reaper-bar");
		if (!e || !p) return;
		e.hidden = !p.eta_ms;
		if (!p.eta_ms) return;
		var n = e.querySelectorAll(".eta-n"), s = String(Math.ceil(p.eta_ms / 1000));
		var waited = base ? Date.now() - base : 0, late = base && waited > p.eta_ms;
		// Only what changed: the text of a node that is read out must not churn.
		for (var i = 0; i < n.length; i++) if (n[i].textContent !== s) n[i].textContent = s;
		d.setAttribute("data-eta", late ? "late" : "usual");
		if (bar) bar.value = late ? 100 : Math.round(100 * waited / p.eta_ms);
	}

	var el = $("elapsed"), n = $("n");
	if (el && n) el.hidden = false;
	setInterval(function () {
		if (el && n) n.textContent = Math.floor((Date.now() - t0) / 1000);
		tick();
	}, 500);
	if (p) update(p);
	if (C.preview) return;
	// A wake limit refused the wake: nothing to follow; the page asks again once the wait is over.
	if (C.retry) {
		setTimeout(function () { over = true; location.reload(); }, C.retry);
		return;
	}

	// poll sends the reference's HEAD poll to the page's own URL: the gateway's answer (its marker) shows
	// the status, a 5xx or the 404 of an app with no instance means almost ready, any other answer is
	// the app's own: the page opens it.
	function poll(then) {
		// A poll that hangs must not stop the polling: abort it and try again.
		var c = window.AbortController ? new AbortController() : null;
		var k = setTimeout(function () { if (c) c.abort(); }, Math.max(C.poll, 10000));
		fetch(location.href, {
			method: "HEAD",
			headers: {"CleverCloud-Reaper": "poll", "Accept": "application/json"},
			credentials: "include",
			cache: "no-store",
			// A redirect is the app answering (to a login page, say): see it rather than follow it.
			redirect: "manual",
			signal: c ? c.signal : undefined
		}).then(function (r) {
			clearTimeout(k);
			var s = r.headers.get("CleverCloud-Reaper-Status");
			if (s) {
				show(s === "Error" ? "error" : s === "Up" ? "almost" : "waiting", s);
			} else if (r.type !== "opaqueredirect" && (r.status >= 500 ||
				(r.status === 404 && (r.headers.get("X-CleverCloudUpgrade") || "").toLowerCase() === "true"))) {
				show("almost");
			} else {
				over = true;
				location.reload();
				return;
			}
			then();
		}, function () { clearTimeout(k); then(); });
	}
	// next schedules the next poll: every poll interval, every error interval in Error, and while the live
	// progress flows every error interval too, as a safety net.
	function next() {
		if (over) return;
		clearTimeout(timer);
		timer = setTimeout(function () { poll(next); }, es || d.getAttribute("data-state") === "error" ? C.errorPoll : C.poll);
	}
	// fallback gives the live progress up (it failed, was buffered, or ended) for the reference's polling.
	function fallback() {
		if (es) { es.close(); es = null; }
		d.setAttribute("data-live", "poll");
		next();
	}
	if (!C.events || !window.EventSource) {
		fallback();
		return;
	}
	es = new EventSource(C.events);
	// A proxy that buffers the stream delivers nothing: poll instead.
	var first = setTimeout(fallback, C.poll);
	function got(e) {
		clearTimeout(first);
		d.setAttribute("data-live", "events");
		var q = JSON.parse(e.data);
		update(q);
		return q;
	}
	es.addEventListener("state", function (e) {
		var q = got(e);
		show(q.state, q.status);
		if (q.state === "error") fallback();
	});
	es.addEventListener("ready", function (e) {
		got(e);
		es.close();
		es = null;
		show("almost");
		// Requests go through now: one poll makes sure the app answers, and opens it.
		clearTimeout(timer);
		poll(next);
	});
	es.onerror = function () {
		clearTimeout(first);
		if (es) fallback();
	};
	next();
})
