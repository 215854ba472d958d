// Lookout live updates: our one script. Pages work without it; with it, one Server-Sent
// Events stream per tab says when the fleet changed, and the parts of the page marked
// `data-live` are fetched again and replaced where they differ. A region the user is
// typing in is left alone and a "reload" offer is shown instead; nothing is replaced while a
// press or a form submission is under way.
(function () {
  "use strict";
  if (!window.EventSource || !window.fetch || !window.DOMParser) return;

  var body = document.body;
  var rev = Number(body.getAttribute("data-rev") || "0");
  var status = document.getElementById("live-status");
  var MIN_INTERVAL_MS = 1000;
  var inFlight = false;
  var pending = false;
  var lastFetch = 0;
  // While a press is under way (between pointer down and the click) or a form is being sent,
  // the page is not replaced: a swap there would swallow the click.
  var holdUntil = 0;
  document.addEventListener("pointerdown", function () { holdUntil = Date.now() + 1500; }, true);
  document.addEventListener("submit", function () { holdUntil = Date.now() + 10000; }, true);

  function say(text, state) {
    if (!status) return;
    status.textContent = text;
    status.setAttribute("data-state", state);
  }

  function busyIn(region) {
    var active = document.activeElement;
    if (!active || !region.contains(active)) return false;
    var tag = active.tagName;
    return tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA";
  }

  function offerReload() {
    if (document.getElementById("live-reload")) return;
    var button = document.createElement("button");
    button.id = "live-reload";
    button.type = "button";
    button.textContent = "New data: reload";
    button.setAttribute("data-testid", "live-reload");
    button.addEventListener("click", function () { window.location.reload(); });
    if (status) status.after(button);
  }

  // A reader who has scrolled down is reading: rows do not move under them. The fresh page
  // waits behind a "New data" button (or until they are back at the top).
  var held = null;
  function scrolled() { return window.scrollY > 40; }

  function offerUpdate() {
    if (document.getElementById("live-update")) return;
    var button = document.createElement("button");
    button.id = "live-update";
    button.type = "button";
    button.className = "live-update";
    button.textContent = "New data: show it";
    button.setAttribute("data-testid", "live-update");
    button.addEventListener("click", function () {
      var html = held;
      held = null;
      button.remove();
      if (html) apply(html, true);
    });
    document.body.appendChild(button);
  }

  window.addEventListener("scroll", function () {
    if (held && !scrolled()) {
      var html = held;
      held = null;
      var button = document.getElementById("live-update");
      if (button) button.remove();
      apply(html, true);
    }
  }, { passive: true });

  // `force`: the reader asked for it (the "New data" button, or scrolling back to the top).
  function apply(html, force) {
    if (!force && holdUntil > Date.now()) { pending = true; setTimeout(flush, holdUntil - Date.now()); return; }
    if (!force && scrolled()) { held = html; offerUpdate(); return; }
    var next = new DOMParser().parseFromString(html, "text/html");
    var nextRev = Number(next.body.getAttribute("data-rev") || "0");
    var changed = 0;
    var skipped = false;
    document.querySelectorAll("[data-live]").forEach(function (region) {
      if (!region.id) return;
      var fresh = next.getElementById(region.id);
      if (!fresh || fresh.innerHTML === region.innerHTML) return;
      if (busyIn(region)) { skipped = true; return; }
      region.innerHTML = fresh.innerHTML;
      changed += 1;
    });
    if (nextRev !== rev) {
      rev = nextRev;
      body.setAttribute("data-rev", String(rev));
    }
    if (skipped) offerReload();
    if (changed > 0) { addCopyButtons(); showZone(); }
    body.setAttribute("data-live-updates", String(Number(body.getAttribute("data-live-updates") || "0") + (changed > 0 ? 1 : 0)));
  }

  function refresh() {
    if (inFlight) { pending = true; return; }
    var held = holdUntil - Date.now();
    if (held > 0) { pending = true; setTimeout(flush, held); return; }
    var wait = lastFetch + MIN_INTERVAL_MS - Date.now();
    if (wait > 0) { pending = true; setTimeout(flush, wait); return; }
    inFlight = true;
    lastFetch = Date.now();
    fetch(window.location.href, { headers: { "Accept": "text/html" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (html) { apply(html); say("Live", "live"); })
      .catch(function () { say("Live updates paused: the page could not be fetched", "error"); })
      .then(function () { inFlight = false; flush(); });
  }

  function flush() {
    if (pending && !inFlight) { pending = false; refresh(); }
  }

  // A "Copy" button beside each command block (the text stays selectable without it).
  function addCopyButtons() {
    if (!navigator.clipboard) return;
    document.querySelectorAll("pre.command").forEach(function (pre) {
      if (pre.previousElementSibling && pre.previousElementSibling.classList.contains("copy")) return;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "copy";
      button.textContent = "Copy";
      button.setAttribute("data-testid", "copy");
      button.addEventListener("click", function () {
        navigator.clipboard.writeText(pre.textContent).then(function () { button.textContent = "Copied"; });
      });
      pre.before(button);
    });
  }
  addCopyButtons();

  // Times: relative on the page, the absolute time on hover and tap — in UTC, or in the
  // browser's zone once the reader asks (remembered in this browser).
  var zone = "utc";
  try { zone = window.localStorage.getItem("lookout-times") === "local" ? "local" : "utc"; } catch (e) { /* private mode */ }
  function showZone() {
    document.querySelectorAll("time[datetime]").forEach(function (t) {
      if (!t.hasAttribute("data-utc")) t.setAttribute("data-utc", t.getAttribute("title") || "");
      if (zone === "local") {
        var d = new Date(t.getAttribute("datetime"));
        if (!isNaN(d)) t.setAttribute("title", d.toLocaleString(undefined, { timeZoneName: "short" }));
      } else {
        t.setAttribute("title", t.getAttribute("data-utc"));
      }
    });
    var button = document.getElementById("time-zone");
    if (button) {
      button.textContent = zone === "local" ? "Times: local" : "Times: UTC";
      button.setAttribute("aria-pressed", zone === "local" ? "true" : "false");
    }
  }
  if (status) {
    var zoneButton = document.createElement("button");
    zoneButton.id = "time-zone";
    zoneButton.type = "button";
    zoneButton.className = "time-zone";
    zoneButton.setAttribute("data-testid", "time-zone");
    zoneButton.title = "Show absolute times in UTC or in your browser's time zone";
    zoneButton.addEventListener("click", function () {
      zone = zone === "local" ? "utc" : "local";
      try { window.localStorage.setItem("lookout-times", zone); } catch (e) { /* private mode */ }
      showZone();
    });
    status.before(zoneButton);
  }
  showZone();

  // "/" jumps to the search box (unless one is typing somewhere already).
  document.addEventListener("keydown", function (event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    var t = event.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    var search = document.getElementById("global-search");
    if (search) { event.preventDefault(); search.focus(); search.select(); }
  });

  var source = new EventSource("/api/v1/events");
  source.addEventListener("open", function () { say("Live", "live"); });
  source.addEventListener("error", function () { say("Live updates reconnecting…", "error"); });
  source.addEventListener("change", function (event) {
    var data;
    try { data = JSON.parse(event.data); } catch (e) { return; }
    // A different revision (also a lower one: the server restarted) means new data.
    if (typeof data.rev === "number" && data.rev !== rev) refresh();
  });
})();
