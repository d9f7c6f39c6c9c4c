package api

import (
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/netguard"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
)

// mountBridges registers the bridge and bridge type endpoints (spec Part 2).
// Routes are registered with full paths (no sub-router on /bridges) so that
// other files can add more /bridges/{id}/… routes to the same router.
func (s *Server) mountBridges(r chi.Router) {
	read := r.With(s.scope("bridges:read"))
	write := r.With(s.scope("bridges:write"))

	read.Get("/bridges", s.h(s.listBridges))
	write.Post("/bridges", s.h(s.createBridge))
	read.Get("/bridges/{id}", s.h(s.getBridge))
	write.Patch("/bridges/{id}", s.h(s.updateBridge))
	write.Delete("/bridges/{id}", s.h(s.deleteBridge))
	read.Get("/bridges/{id}/tasks", s.h(s.listBridgeTasks))
	s.mountBridgeWebhooks(r)

	read.Get("/bridge-types", s.h(s.listBridgeTypes))
	read.Get("/bridge-types/{id}", s.h(s.getBridgeType))
}

// bridgeTypes are the five bridge type slugs, in catalog order.
func bridgeTypes() []string {
	types := platforms.Types()
	out := make([]string, len(types))
	for i, t := range types {
		out[i] = t.Slug
	}
	return out
}

var bridgeTypeCategories = []string{platforms.CategoryEcommerce, platforms.CategoryShipping, platforms.CategoryMarketplace, platforms.CategoryERP}

// bridgeJSON is the Bridge resource (camelCase). Config is the full config
// with every credential value redacted.
type bridgeJSON struct {
	ID             uuid.UUID      `json:"id"`
	OrganizationID uuid.UUID      `json:"organizationId"`
	Type           string         `json:"type"`
	Name           string         `json:"name"`
	Config         map[string]any `json:"config"`
	Status         string         `json:"status"`
	LastSyncAt     *time.Time     `json:"lastSyncAt"`
	LastError      *string        `json:"lastError"` // extension: why the bridge is in error
	CreatedAt      time.Time      `json:"createdAt"`
	UpdatedAt      time.Time      `json:"updatedAt"`
}

// toBridgeJSON renders a bridge. Credentials are opened only to learn which
// secret keys are set; their values are replaced by platforms.RedactedValue.
// A row whose credentials cannot be opened (a changed encryption key) is
// still rendered, without its secret keys, and the problem is logged.
func (s *Server) toBridgeJSON(r *http.Request, b store.Bridge) bridgeJSON {
	full, err := store.BridgeFullConfig(s.secrets, b)
	if err != nil {
		s.log.WarnContext(r.Context(), "cannot open bridge credentials", append(logAttrs(r), "bridge_id", b.ID.String(), "error", err.Error())...)
		full = make(map[string]any, len(b.Config))
		for k, v := range b.Config {
			full[k] = v
		}
	}
	cfg := platforms.RedactConfig(b.Type, full)
	if _, ok := cfg[platforms.ConfigEnabledWebhooks]; !ok {
		cfg[platforms.ConfigEnabledWebhooks] = []string{}
	}
	if _, ok := cfg[platforms.ConfigRegisteredWebhooks]; !ok {
		cfg[platforms.ConfigRegisteredWebhooks] = map[string]any{}
	}
	return bridgeJSON{
		ID: b.ID, OrganizationID: b.OrganizationID, Type: b.Type, Name: b.Name, Config: cfg,
		Status: b.Status, LastSyncAt: b.LastSyncAt, LastError: b.LastError, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt,
	}
}

func (s *Server) listBridges(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r, 20, 100)
	if err != nil {
		return err
	}
	typ, err := queryEnum(r, "type", bridgeTypes()...)
	if err != nil {
		return err
	}
	status, err := queryEnum(r, "status", store.BridgeStatuses...)
	if err != nil {
		return err
	}
	list, total, err := store.ListBridges(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, store.BridgeFilter{
		Type: typ, Status: status, Limit: p.Limit, Offset: p.Offset(),
	})
	if err != nil {
		return err
	}
	out := make([]bridgeJSON, 0, len(list))
	for _, b := range list {
		out = append(out, s.toBridgeJSON(r, b))
	}
	writeList(w, out, p, total)
	return nil
}

// bridgeFromPath loads the organization's bridge named by {id}; an unknown,
// malformed or foreign id is 404.
func (s *Server) bridgeFromPath(r *http.Request) (store.Bridge, error) {
	return loadByID(s, r, "bridge", store.BridgeByID)
}

func (s *Server) getBridge(w http.ResponseWriter, r *http.Request) error {
	b, err := s.bridgeFromPath(r)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, s.toBridgeJSON(r, b))
	return nil
}

type createBridgeRequest struct {
	Type   *string        `json:"type"`
	Name   *string        `json:"name"`
	Config map[string]any `json:"config"`
}

// addConfigErrors copies config validation problems into v.
func addConfigErrors(v *validator, errs []platforms.FieldError) {
	for _, e := range errs {
		v.add(e.Field, e.Message)
	}
}

// dropRedacted removes values equal to the redaction placeholder: a client
// that sends back what it read must not overwrite a credential with it.
func dropRedacted(cfg map[string]any) {
	for k, v := range cfg {
		if s, ok := v.(string); ok && s == platforms.RedactedValue {
			delete(cfg, k)
		}
	}
}

func (s *Server) createBridge(w http.ResponseWriter, r *http.Request) error {
	var req createBridgeRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var v validator
	typeOK := false
	if v.required("type", req.Type) {
		typeOK = v.oneOf("type", *req.Type, bridgeTypes()...)
	}
	if v.required("name", req.Name) {
		v.length("name", strings.TrimSpace(*req.Name), 1, 100)
	}
	var cfg map[string]any
	if req.Config == nil {
		v.add("config", "is required")
	} else if typeOK {
		var errs []platforms.FieldError
		cfg, errs = platforms.NormalizeConfig(*req.Type, req.Config)
		addConfigErrors(&v, errs)
		dropRedacted(cfg)
		s.checkURLFields(&v, *req.Type, cfg)
		for _, k := range platforms.MissingRequired(*req.Type, cfg) {
			if !hasDetail(v.details, "config."+k) {
				v.add("config."+k, "is required")
			}
		}
		s.checkConnectorConfig(&v, *req.Type, cfg)
	}
	if err := v.err(); err != nil {
		return err
	}
	if _, ok := cfg[platforms.ConfigEnabledWebhooks]; !ok {
		cfg[platforms.ConfigEnabledWebhooks] = []string{}
	}
	if _, ok := cfg[platforms.ConfigRegisteredWebhooks]; !ok {
		cfg[platforms.ConfigRegisteredWebhooks] = map[string]any{}
	}
	bridgeID, orgID := uuid.New(), mustPrincipal(r).OrganizationID
	config, creds, err := store.SplitBridgeConfig(s.secrets, store.BridgeCredentialsAD(orgID, bridgeID), *req.Type, cfg)
	if err != nil {
		return err
	}
	b, err := store.CreateBridge(r.Context(), s.store.Pool, store.Bridge{
		ID: bridgeID, OrganizationID: orgID, Type: *req.Type,
		Name: strings.TrimSpace(*req.Name), Config: config, Credentials: creds, Status: store.BridgeActive,
	})
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, s.toBridgeJSON(r, b))
	return nil
}

// checkURLFields validates the URL fields of a bridge config (storefront_b's
// storeUrl): an absolute http(s) URL that, unless FOS_ALLOW_PRIVATE_URLS,
// names no loopback, private, link-local or metadata address or local name
// (CONTRACT 8b). Names that resolve to such addresses are refused when
// dialed (netguard.NewClient).
func (s *Server) checkURLFields(v *validator, bridgeType string, cfg map[string]any) {
	bt, ok := platforms.TypeBySlug(bridgeType)
	if !ok {
		return
	}
	for _, f := range bt.ConfigFields {
		u, isString := cfg[f.Key].(string)
		if f.Type != platforms.FieldTypeURL || !isString || u == "" || hasDetail(v.details, "config."+f.Key) {
			continue
		}
		if err := netguard.CheckURL(u, s.allowPrivateURLs); err != nil {
			v.add("config."+f.Key, err.Error())
		}
	}
}

// checkConnectorConfig applies the bridge type's connector's own rules to
// a complete config that passed the catalog's (storefront_a's shop must be
// a .myshopify.com domain unless FOS_STOREFRONT_A_URL is set, storefront_b's
// storeUrl https:// outside the sandbox, ...), so a bridge that could never
// reach its platform is refused with the field named.
func (s *Server) checkConnectorConfig(v *validator, bridgeType string, cfg map[string]any) {
	if s.platforms == nil || !v.ok() {
		return
	}
	addConfigErrors(v, s.platforms.CheckConfig(bridgeType, cfg))
}

func hasDetail(details []FieldError, field string) bool {
	for _, d := range details {
		if d.Field == field {
			return true
		}
	}
	return false
}

type updateBridgeRequest struct {
	Name   *string        `json:"name"`
	Config map[string]any `json:"config"`
	Status *string        `json:"status"`
}

func (s *Server) updateBridge(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "bridge")
	if err != nil {
		return err
	}
	var req updateBridgeRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	orgID := mustPrincipal(r).OrganizationID
	var out store.Bridge
	err = s.store.InTx(r.Context(), func(tx pgx.Tx) error {
		b, err := store.LockBridge(r.Context(), tx, orgID, id)
		if err == store.ErrNotFound {
			return errNotFound("bridge")
		}
		if err != nil {
			return err
		}
		var v validator
		patch := store.BridgePatch{Status: req.Status}
		if req.Name != nil {
			name := strings.TrimSpace(*req.Name)
			v.length("name", name, 1, 100)
			patch.Name = &name
		}
		if req.Status != nil {
			v.oneOf("status", *req.Status, store.BridgeStatuses...)
		}
		if req.Config != nil {
			update, errs := platforms.NormalizeConfig(b.Type, req.Config)
			addConfigErrors(&v, errs)
			dropRedacted(update)
			s.checkURLFields(&v, b.Type, update)
			full, err := store.BridgeFullConfig(s.secrets, b)
			if err != nil {
				return err
			}
			old := maps.Clone(full)
			for k, val := range update {
				if val == nil {
					delete(full, k)
					continue
				}
				full[k] = val
			}
			for _, k := range platforms.MissingRequired(b.Type, full) {
				if !hasDetail(v.details, "config."+k) {
					v.add("config."+k, "is required")
				}
			}
			s.checkConnectorConfig(&v, b.Type, full)
			credentialsFollowEndpoint(&v, b.Type, old, update)
			if v.ok() {
				patch.Config, patch.Credentials, err = store.SplitBridgeConfig(s.secrets, store.BridgeCredentialsAD(b.OrganizationID, b.ID), b.Type, full)
				if err != nil {
					return err
				}
			}
		}
		if err := v.err(); err != nil {
			return err
		}
		out, err = store.UpdateBridge(r.Context(), tx, orgID, id, patch)
		return err
	})
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, s.toBridgeJSON(r, out))
	return nil
}

func (s *Server) deleteBridge(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "bridge")
	if err != nil {
		return err
	}
	if err := store.DeleteBridge(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, id); err != nil {
		if err == store.ErrNotFound {
			return errNotFound("bridge")
		}
		return err
	}
	writeSuccess(w)
	return nil
}

func (s *Server) listBridgeTasks(w http.ResponseWriter, r *http.Request) error {
	b, err := s.bridgeFromPath(r)
	if err != nil {
		return err
	}
	tasks := platforms.Tasks(b.Type)
	if tasks == nil {
		tasks = []platforms.TaskDefinition{}
	}
	writeData(w, http.StatusOK, tasks)
	return nil
}

func (s *Server) listBridgeTypes(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r, 20, 100)
	if err != nil {
		return err
	}
	category, err := queryEnum(r, "category", bridgeTypeCategories...)
	if err != nil {
		return err
	}
	var matched []platforms.BridgeType
	for _, t := range platforms.Types() {
		if category == "" || t.Category == category {
			matched = append(matched, t)
		}
	}
	total := len(matched)
	start := min(p.Offset(), total)
	end := min(start+p.Limit, total)
	writeList(w, matched[start:end], p, total)
	return nil
}

// getBridgeType answers one catalog entry by its id or, as a convenience,
// by its slug.
func (s *Server) getBridgeType(w http.ResponseWriter, r *http.Request) error {
	key := chi.URLParam(r, "id")
	t, ok := platforms.TypeByID(key)
	if !ok {
		t, ok = platforms.TypeBySlug(key)
	}
	if !ok {
		return errNotFound("bridge type")
	}
	writeData(w, http.StatusOK, t)
	return nil
}
