package api

import (
	"errors"
	"html/template"
	"net/http"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/embed"
)

// An end user's bridges and storefront_a's OAuth connect (embed.Service).

func (s *Server) listEmbedBridges(w http.ResponseWriter, r *http.Request) error {
	list, err := s.Embed.ListBridges(r.Context(), embedActorOf(r))
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, list)
	return nil
}

func (s *Server) createEmbedBridge(w http.ResponseWriter, r *http.Request) error {
	var in embed.BridgeInput
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	b, err := s.Embed.CreateBridge(s.embedCtx(r), embedActorOf(r), in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, b)
	return nil
}

func (s *Server) updateEmbedBridge(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "bridge")
	if err != nil {
		return err
	}
	var in embed.BridgePatchInput
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	b, err := s.Embed.UpdateBridge(s.embedCtx(r), embedActorOf(r), id, in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, b)
	return nil
}

func (s *Server) deleteEmbedBridge(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "bridge")
	if err != nil {
		return err
	}
	if err := s.Embed.DeleteBridge(s.embedCtx(r), embedActorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}

func (s *Server) testEmbedBridge(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "bridge")
	if err != nil {
		return err
	}
	res, err := s.Embed.TestBridge(r.Context(), embedActorOf(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) listEmbedBridgeTypes(w http.ResponseWriter, r *http.Request) error {
	list, err := s.Embed.BridgeTypes(r.Context(), embedActorOf(r))
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, list)
	return nil
}

func (s *Server) startStorefrontAOAuth(w http.ResponseWriter, r *http.Request) error {
	var in embed.OAuthStartInput
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	res, err := s.Embed.StartOAuth(s.embedCtx(r), embedActorOf(r), in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, res)
	return nil
}

// oauthDonePage closes the OAuth popup and tells the widget (served from
// this origin) how it went.
var oauthDonePage = template.Must(template.New("done").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{if .OK}}Connected{{else}}Connection failed{{end}}</title></head>
<body><p id="result" role="status">{{if .OK}}Your store is connected. You can close this window.{{else}}{{.Message}}{{end}}</p>
<script nonce="{{.Nonce}}">
(function () {
  var msg = {source: "fos-oauth", ok: {{.OK}}, bridgeId: {{.BridgeID}}, message: {{.Message}}};
  if (window.opener) { window.opener.postMessage(msg, window.location.origin); window.close(); }
})();
</script></body></html>`))

// storefrontACallback is the public OAuth callback (CONTRACT 12). It
// answers a small page for the popup: 200 when connected, the status of
// the refusal otherwise (the bridge unchanged).
func (s *Server) storefrontACallback(w http.ResponseWriter, r *http.Request) {
	page := struct {
		OK       bool
		BridgeID string
		Message  string
		Nonce    string
	}{Nonce: randomNonce()}
	status := http.StatusOK
	if err := s.embedLimits.callbackIP.check(s.clientIP(r)); err != nil {
		s.respondError(w, r, err)
		return
	}
	res, err := s.Embed.CompleteOAuth(s.embedCtx(r), r.URL.Query())
	if err != nil {
		var derr *domain.Error
		apiErr := &Error{Status: 500, Code: "internal", Message: "the connection could not be completed"}
		if errors.As(err, &derr) {
			apiErr = fromDomain(derr)
		} else {
			s.log.ErrorContext(r.Context(), "oauth callback", append(logAttrs(r), "error", err.Error())...)
		}
		status, page.Message = apiErr.Status, apiErr.Message
	} else {
		page.OK, page.BridgeID = true, res.BridgeID.String()
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+page.Nonce+"'; frame-ancestors 'none'")
	w.WriteHeader(status)
	_ = oauthDonePage.Execute(w, page)
}
