// connectrt console: the record inspector page. Reads GET /connectors/{name}/tap (server-sent
// events) with EventSource, same origin, so the browser sends its credentials; one stream at a
// time, reopened when the stage or the rate changes.
"use strict";

(function () {
  const form = document.getElementById("tap-form");
  if (!form) return;
  const connector = form.dataset.connector;
  const list = document.getElementById("tap-events");
  const state = document.getElementById("tap-state");
  const toggle = document.getElementById("tap-toggle");
  const KEEP = 100;
  let source = null;
  let paused = false;

  const url = () => {
    const params = new URLSearchParams({
      stage: document.getElementById("tap-stage").value,
      rate: document.getElementById("tap-rate").value,
    });
    return "/connectors/" + encodeURIComponent(connector) + "/tap?" + params.toString();
  };

  const shown = (value) => {
    if (value && typeof value === "object" && "base64" in value) {
      return "text" in value ? value.text : "base64:" + value.base64;
    }
    return value;
  };

  const item = (event) => {
    const li = document.createElement("li");
    li.className = "tap-event";
    const head = document.createElement("div");
    head.className = "tap-head";
    const where = [event.stage, "task " + event.task, event.topic];
    if (event.partition !== null && event.partition !== undefined) where.push("partition " + event.partition);
    if (event.offset !== null && event.offset !== undefined) where.push("offset " + event.offset);
    if (event.timestamp) where.push(new Date(event.timestamp).toISOString());
    head.textContent = where.join(" · ");
    li.appendChild(head);
    const body = document.createElement("pre");
    body.className = "tap-body";
    const view = {};
    for (const k of ["error", "dropped", "key", "value", "headers", "key_schema", "value_schema",
                     "source_partition", "source_offset"]) {
      if (event[k] === undefined || event[k] === null) continue;
      view[k] = k === "key" || k === "value" ? shown(event[k]) : event[k];
    }
    body.textContent = JSON.stringify(view, null, 2);
    li.appendChild(body);
    return li;
  };

  // A stream the server refused (400, 404, 409): EventSource does not say why; ask once.
  const explain = async (target) => {
    const abort = new AbortController();
    try {
      const response = await fetch(target, { signal: abort.signal, headers: { "Accept": "text/event-stream" } });
      if (!response.ok) {
        const text = await response.text();
        let message = "HTTP " + response.status;
        try { message = JSON.parse(text).message || message; } catch (e) { /* not JSON */ }
        state.textContent = message;
        state.className = "tap-state error";
      }
    } catch (e) { /* gone */ }
    abort.abort();
  };

  const open = () => {
    if (source) source.close();
    const target = url();
    state.textContent = "connecting…";
    state.className = "tap-state";
    source = new EventSource(target);
    source.addEventListener("tap", (e) => {
      const head = JSON.parse(e.data);
      state.textContent = "watching " + head.stage + " at " + head.rate + " records/s";
      state.className = "tap-state ok";
    });
    source.addEventListener("record", (e) => {
      if (paused) return;
      list.insertBefore(item(JSON.parse(e.data)), list.firstChild);
      while (list.children.length > KEEP) list.removeChild(list.lastChild);
    });
    source.addEventListener("dropped", (e) => {
      state.textContent = "watching; " + JSON.parse(e.data).dropped + " records dropped (the page lagged)";
    });
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) explain(target);
      else { state.textContent = "reconnecting…"; state.className = "tap-state"; }
    };
  };

  form.addEventListener("change", open);
  toggle.addEventListener("click", () => {
    paused = !paused;
    toggle.textContent = paused ? "Resume" : "Pause";
  });
  document.getElementById("tap-clear").addEventListener("click", () => { list.textContent = ""; });
  window.addEventListener("pagehide", () => { if (source) source.close(); });
  open();
})();
