/* The connect page inside the iframe: lists the allowed bridge types,
 * builds the credential form from a type's config_fields (or runs
 * storefront_a OAuth in a popup), creates and tests the bridge, and tells
 * the host page (its origin only) "ready", "connected", "error", "close". */
(function () {
  "use strict";
  var body = document.body;
  var hostOrigin = body.getAttribute("data-origin");
  var api = body.getAttribute("data-api");
  var color = body.getAttribute("data-color");
  if (color) { document.documentElement.style.setProperty("--primary", color); }
  var token = null;
  var $ = function (id) { return document.getElementById(id); };

  function post(msg) {
    if (hostOrigin && window.parent !== window) { window.parent.postMessage(msg, hostOrigin); }
  }
  function show(id) {
    ["pick", "form-view", "done"].forEach(function (s) { $(s).hidden = s !== id; });
  }
  function status(text) { $("status").textContent = text || ""; }
  function alertMsg(text) { $("alert").textContent = text || ""; $("alert").hidden = !text; }

  function call(method, path, data) {
    return fetch(api + path, {
      method: method,
      headers: {"Authorization": "Bearer " + token, "Content-Type": "application/json"},
      body: data === undefined ? undefined : JSON.stringify(data)
    }).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (b) {
        if (!res.ok) { var e = (b && b.error) || {}; e.status = res.status; throw e; }
        return b;
      });
    });
  }

  function fail(err, where) {
    var msg = (err && err.message) || "Something went wrong";
    alertMsg(msg);
    post({type: "error", code: (err && err.code) || "error", message: msg, where: where || ""});
  }

  function connected(bridge) {
    show("done");
    status("");
    $("done-text").textContent = bridge.name + " is connected.";
    post({type: "connected", bridgeId: bridge.id, type_: bridge.type, bridgeType: bridge.type});
  }

  function testThen(bridge) {
    status("Testing the connection…");
    return call("POST", "/bridges/" + bridge.id + "/test").then(function (r) {
      if (!r.success) { throw {code: "test_failed", message: "Connected, but the test failed: " + r.message}; }
      connected(bridge);
    });
  }

  function fieldInput(f) {
    var wrap = document.createElement("div");
    var id = "f-" + f.key;
    var label = document.createElement("label");
    label.htmlFor = id;
    label.textContent = f.label + (f.required ? " *" : "");
    var input = document.createElement("input");
    input.id = id;
    input.name = f.key;
    input.type = f.secret ? "password" : (f.type === "url" ? "url" : (f.type === "number" ? "number" : (f.type === "boolean" ? "checkbox" : "text")));
    input.autocomplete = "off";
    if (f.required) { input.required = true; input.setAttribute("aria-required", "true"); }
    var err = document.createElement("div");
    err.className = "field-error";
    err.id = id + "-error";
    input.setAttribute("aria-describedby", err.id);
    wrap.appendChild(label);
    wrap.appendChild(input);
    wrap.appendChild(err);
    return wrap;
  }

  function showErrors(err) {
    (err.details || []).forEach(function (d) {
      var key = String(d.field || "").replace(/^config\./, "");
      var el = $("f-" + key + "-error");
      if (el) { el.textContent = d.message; $("f-" + key).setAttribute("aria-invalid", "true"); }
    });
    var first = document.querySelector("[aria-invalid=true]");
    if (first) { first.focus(); }
  }

  function credentialForm(t) {
    var form = $("form");
    form.innerHTML = "";
    var nameField = fieldInput({key: "__name", label: "Connection name", type: "string", required: true});
    form.appendChild(nameField);
    (t.config_fields || []).forEach(function (f) { form.appendChild(fieldInput(f)); });
    var submit = document.createElement("button");
    submit.type = "submit";
    submit.className = "primary";
    submit.textContent = "Connect";
    form.appendChild(submit);
    $("f-__name").value = t.name;
    form.onsubmit = function (e) {
      e.preventDefault();
      alertMsg("");
      Array.prototype.forEach.call(form.querySelectorAll(".field-error"), function (el) { el.textContent = ""; });
      var config = {};
      (t.config_fields || []).forEach(function (f) {
        var el = $("f-" + f.key);
        if (f.type === "boolean") { config[f.key] = el.checked; } else if (el.value !== "") { config[f.key] = f.type === "number" ? Number(el.value) : el.value; }
      });
      submit.disabled = true;
      status("Connecting…");
      call("POST", "/bridges", {type: t.id, name: $("f-__name").value, config: config}).then(function (r) {
        return testThen(r.data);
      }).catch(function (err) {
        status("");
        showErrors(err);
        fail(err, "create");
      }).then(function () { submit.disabled = false; });
    };
  }

  function oauthForm(t) {
    var form = $("form");
    form.innerHTML = "";
    form.appendChild(fieldInput({key: "shopDomain", label: "Shop domain", type: "string", required: true}));
    var submit = document.createElement("button");
    submit.type = "submit";
    submit.className = "primary";
    submit.textContent = "Connect with " + t.name;
    form.appendChild(submit);
    form.onsubmit = function (e) {
      e.preventDefault();
      alertMsg("");
      // Opened in the click, so popup blockers let it through.
      var popup = window.open("about:blank", "fos-oauth", "width=520,height=640");
      status("Waiting for " + t.name + "…");
      call("POST", "/bridges/storefront_a/oauth/start", {shopDomain: $("f-shopDomain").value}).then(function (r) {
        var bridgeId = r.data.bridgeId;
        var onMsg = function (ev) {
          if (ev.origin !== window.location.origin || !ev.data || ev.data.source !== "fos-oauth") { return; }
          window.removeEventListener("message", onMsg);
          if (!ev.data.ok) { status(""); fail({code: "oauth_failed", message: ev.data.message}, "oauth"); return; }
          testThen({id: bridgeId, name: t.name, type: t.id}).catch(function (err) { status(""); fail(err, "test"); });
        };
        window.addEventListener("message", onMsg);
        if (popup) { popup.location.href = r.data.authUrl; } else { window.location.href = r.data.authUrl; }
      }).catch(function (err) {
        if (popup) { popup.close(); }
        status("");
        showErrors(err);
        fail(err, "oauth");
      });
    };
  }

  function pick(t) {
    alertMsg("");
    $("form-title").textContent = t.name;
    if (t.id === "storefront_a" && (t.auth_methods || []).indexOf("oauth2") >= 0) { oauthForm(t); } else { credentialForm(t); }
    show("form-view");
    var first = $("form").querySelector("input");
    if (first) { first.focus(); }
  }

  function start() {
    status("Loading…");
    call("GET", "/bridge-types").then(function (r) {
      status("");
      var list = $("types");
      list.innerHTML = "";
      r.data.forEach(function (t) {
        var li = document.createElement("li");
        var b = document.createElement("button");
        b.type = "button";
        b.textContent = t.name;
        b.setAttribute("data-type", t.id);
        b.onclick = function () { pick(t); };
        li.appendChild(b);
        list.appendChild(li);
      });
      show("pick");
      var first = list.querySelector("button");
      if (first) { first.focus(); }
    }).catch(function (err) { status(""); fail(err, "load"); });
  }

  $("close").onclick = function () { post({type: "close"}); };
  $("back").onclick = function () { alertMsg(""); show("pick"); };
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") { post({type: "close"}); } });
  window.addEventListener("message", function (e) {
    if (e.origin !== hostOrigin || e.source !== window.parent || !e.data || e.data.type !== "fos:init" || token) { return; }
    token = e.data.token;
    start();
  });
  post({type: "ready"});
})();
