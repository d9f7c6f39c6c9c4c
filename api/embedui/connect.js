/* FosConnect: the connect widget's loader (CONTRACT 12). Include
 *   <script src="https://<fos>/embed/connect.js"></script>
 * then call
 *   FosConnect.open({publishableKey: "pk_...", externalId: "user-1"}, onEvent)
 * or, with a token from your server's POST /api/v1/embed/sessions,
 *   FosConnect.open({publishableKey: "pk_...", sessionToken: "est_..."}, onEvent)
 * onEvent receives {type: "ready" | "connected" | "error" | "close", ...}.
 * No build step: plain ES5 served from the binary. */
(function () {
  "use strict";
  var script = document.currentScript;
  var base = script ? new URL(script.src).origin : window.location.origin;
  var frame = null;
  var listener = null;

  function emit(onEvent, ev) {
    if (typeof onEvent === "function") {
      try { onEvent(ev); } catch (e) { /* the host's handler */ }
    }
  }

  function close() {
    if (listener) { window.removeEventListener("message", listener); listener = null; }
    if (frame && frame.parentNode) { frame.parentNode.removeChild(frame); }
    frame = null;
  }

  function session(opts) {
    if (opts.sessionToken) { return Promise.resolve(opts.sessionToken); }
    return fetch(base + "/api/v1/embed/sessions/auto", {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({key: opts.publishableKey, externalId: opts.externalId, name: opts.name, email: opts.email})
    }).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (body) {
        if (!res.ok) {
          var err = (body && body.error) || {};
          throw {status: res.status, code: err.code || "error", message: err.message || ("HTTP " + res.status)};
        }
        return body.data.token;
      });
    }, function () {
      throw {status: 0, code: "network_error", message: "the connection service cannot be reached from this page"};
    });
  }

  function open(opts, onEvent) {
    opts = opts || {};
    close();
    if (!opts.publishableKey || (!opts.sessionToken && !opts.externalId)) {
      emit(onEvent, {type: "error", code: "invalid_options", message: "publishableKey and externalId (or sessionToken) are required"});
      return;
    }
    session(opts).then(function (token) {
      frame = document.createElement("iframe");
      frame.src = base + "/embed/connect?key=" + encodeURIComponent(opts.publishableKey) +
        "&origin=" + encodeURIComponent(window.location.origin);
      frame.title = "Connect your store";
      frame.setAttribute("data-fos-connect", "");
      frame.style.cssText = "position:fixed;inset:0;width:100%;height:100%;border:0;z-index:2147483647;background:rgba(0,0,0,.4)";
      listener = function (e) {
        if (e.origin !== base || !frame || e.source !== frame.contentWindow || !e.data || typeof e.data.type !== "string") { return; }
        var ev = e.data;
        if (ev.type === "ready") {
          frame.contentWindow.postMessage({type: "fos:init", token: token}, base);
        }
        emit(onEvent, ev);
        if (ev.type === "close") { close(); }
      };
      window.addEventListener("message", listener);
      (opts.container || document.body).appendChild(frame);
    }, function (err) {
      emit(onEvent, {type: "error", code: err.code, status: err.status, message: err.message});
    });
  }

  window.FosConnect = {open: open, close: close};
})();
