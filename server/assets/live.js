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

  function apply(html) {
    if (holdUntil > Date.now()) { pending = true; setTimeout(flush, holdUntil - Date.now()); return; }
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
    if (changed > 0) addCopyButtons();
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
