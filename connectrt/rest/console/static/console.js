// connectrt console: the few behaviours htmx attributes do not cover. Every change goes to
// the worker's REST API (same origin, so the browser sends the same credentials).
"use strict";

(function () {
  const toast = (message, kind) => {
    const el = document.getElementById("toast");
    if (!el) return;
    el.textContent = message;
    el.className = kind || "error";
    el.hidden = false;
    clearTimeout(el._timer);
    el._timer = setTimeout(() => { el.hidden = true; }, kind === "ok" ? 3000 : 10000);
  };

  // Kafka Connect's error body is {"error_code": N, "message": "..."}.
  const errorMessage = (status, text) => {
    try {
      const body = JSON.parse(text);
      if (body && body.message) return body.message;
    } catch (e) { /* not JSON */ }
    return "HTTP " + status + (text ? ": " + text.slice(0, 300) : "");
  };

  const api = async (method, path, body) => {
    const init = { method: method, headers: { "Accept": "application/json" } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    const text = await response.text();
    return { ok: response.ok, status: response.status, text: text,
             json: () => (text ? JSON.parse(text) : null) };
  };

  const path = (s) => encodeURIComponent(s);

  // -- htmx actions (pause, resume, stop, restart, delete): report the outcome -------------
  document.addEventListener("htmx:afterRequest", (evt) => {
    const elt = evt.detail.elt;
    const xhr = evt.detail.xhr;
    if (!elt || !elt.matches("button[hx-put], button[hx-post], button[hx-delete]")) return;
    if (!evt.detail.successful) {
      toast(errorMessage(xhr.status, xhr.responseText));
      return;
    }
    toast(elt.textContent.trim() + ": done", "ok");
    if (elt.dataset.then) { window.location.href = elt.dataset.then; return; }
    if (elt.dataset.refresh) htmx.trigger(elt.dataset.refresh, "refresh");
  });
  document.addEventListener("htmx:sendError", () => toast("The worker did not answer."));

  // -- the config form: live validation and submit ---------------------------------------
  const formConfig = (form) => {
    const config = {};
    form.querySelectorAll("[data-key]").forEach((input) => {
      if (input.value !== "") config[input.dataset.key] = input.value;
    });
    return config;
  };

  const showErrors = (form, infos, all) => {
    let shown = 0;
    const byKey = {};
    (infos.configs || []).forEach((c) => { byKey[c.value.name] = c.value; });
    form.querySelectorAll("[data-errors-for]").forEach((box) => {
      const key = box.dataset.errorsFor;
      const input = form.querySelector('[data-key="' + CSS.escape(key) + '"]');
      const value = byKey[key];
      const errors = value && (all || (input && input.dataset.touched)) ? value.errors : [];
      box.textContent = errors.join(" ");
      box.closest(".field").classList.toggle("invalid", errors.length > 0);
      shown += errors.length;
    });
    const summary = form.querySelector("#form-summary");
    const total = infos.error_count || 0;
    summary.textContent = total === 0 ? "The configuration is valid."
      : total + (total === 1 ? " error" : " errors") + (shown < total ? " (in fields not filled yet)" : "");
    summary.className = "summary " + (total === 0 ? "ok" : "bad");
    return total;
  };

  // A masked password inside a URL ("scheme://user:[hidden]@host") is no URL a plugin can
  // parse: validate it as "user:hidden@host" (the server's Edit page does the same). Saving
  // sends the form's values as they are, so the stored secret is kept.
  const validationConfig = (config) => {
    const out = {};
    Object.keys(config).forEach((key) => {
      const value = config[key];
      out[key] = value.includes("://") ? value.split(":[hidden]@").join(":hidden@") : value;
    });
    return out;
  };

  const validate = async (form, all) => {
    const plugin = form.dataset.plugin;
    const response = await api("PUT", "/connector-plugins/" + path(plugin) + "/config/validate",
                               validationConfig(formConfig(form)));
    if (!response.ok) { toast(errorMessage(response.status, response.text)); return -1; }
    return showErrors(form, response.json(), all);
  };

  const setupConfigForm = (form) => {
    let timer = null;
    form.addEventListener("input", (evt) => {
      if (evt.target.dataset.key) evt.target.dataset.touched = "1";
      clearTimeout(timer);
      timer = setTimeout(() => validate(form, false), 300);
    });
    form.addEventListener("submit", async (evt) => {
      evt.preventDefault();
      const config = formConfig(form);
      let response;
      let name;
      if (form.dataset.mode === "edit") {
        name = form.dataset.connector;
        response = await api("PUT", "/connectors/" + path(name) + "/config", config);
      } else {
        name = (config.name || "").trim();
        if (!name) { await validate(form, true); toast("A connector name is required."); return; }
        response = await api("POST", "/connectors", { name: name, config: config });
      }
      if (response.ok) {
        window.location.href = "/ui/connectors/" + path(name);
        return;
      }
      await validate(form, true);
      toast(errorMessage(response.status, response.text));
    });
    // Fields typed into before this script ran (a slow page) count as touched, and are
    // validated now rather than at the next keystroke.
    let typed = false;
    form.querySelectorAll("[data-key]").forEach((input) => {
      if ("defaultValue" in input && input.value !== input.defaultValue) {
        input.dataset.touched = "1";
        typed = true;
      }
    });
    form.dataset.ready = "1";  // the listeners are on: what is typed from now on is validated
    if (form.dataset.mode === "edit" || typed) validate(form, form.dataset.mode === "edit");
  };

  // -- offset reset ------------------------------------------------------------------------
  const setupOffsetReset = (form) => {
    form.addEventListener("submit", async (evt) => {
      evt.preventDefault();
      const data = new FormData(form);
      const body = { to: data.get("to") };
      if (data.get("timestamp")) body.timestamp = data.get("timestamp");
      if (data.get("offset")) body.offset = Number(data.get("offset"));
      if (data.get("topic")) body.topic = data.get("topic");
      const name = form.dataset.connector;
      if (!window.confirm("Reset the offsets of " + name + " to " + body.to + "?")) return;
      const response = await api("POST", "/connectors/" + path(name) + "/offsets/reset", body);
      if (!response.ok) { toast(errorMessage(response.status, response.text)); return; }
      toast("Offsets reset to " + body.to, "ok");
      htmx.trigger("#offsets", "refresh");
      htmx.trigger("#status", "refresh");
    });
  };

  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll("form[data-config-form]").forEach(setupConfigForm);
    document.querySelectorAll("form[data-offset-reset]").forEach(setupOffsetReset);
    // The pages render these buttons disabled: clicked before this script had run, a form
    // would be submitted by the browser itself, not through the REST API.
    document.querySelectorAll("[data-enabled-by-script]").forEach((b) => { b.disabled = false; });
  });
})();
