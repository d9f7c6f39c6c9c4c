package embed

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
)

// storefront_a OAuth (CONTRACT 12): oauth/start creates the bridge as
// disconnected with a single-use state bound to it (10 minutes) and
// answers the platform's authorize URL; the platform redirects the end
// user to the public callback, which checks the HMAC of the query with the
// app's client secret (constant time), the state and the shop, and hands
// the code to a workflow whose activity (ExchangeOAuthCode) exchanges it at
// the shop's token endpoint, stores the token sealed, makes the bridge
// active and logs bridge.created.

// OAuthStateTTL is how long an authorization may take.
const OAuthStateTTL = 10 * time.Minute

// CallbackPath is the public callback's path.
const CallbackPath = "/api/v1/embed/oauth/storefront_a/callback"

// shopRE is a storefront_a shop host.
var shopRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,59}\.myshopify\.com$`)

// NormalizeShop turns "acme", "acme.myshopify.com" or
// "https://acme.myshopify.com/" into "acme.myshopify.com"; "" when it is
// not a storefront_a shop host.
func NormalizeShop(raw string) string {
	s := strings.ToLower(strings.TrimSpace(raw))
	s = strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://")
	s = strings.TrimSuffix(s, "/")
	if !strings.Contains(s, ".") {
		s += ".myshopify.com"
	}
	if !shopRE.MatchString(s) {
		return ""
	}
	return s
}

// OAuthStartInput is POST /embed/bridges/storefront_a/oauth/start.
type OAuthStartInput struct {
	ShopDomain *string `json:"shopDomain"`
	Name       *string `json:"name"`
}

// OAuthStart is its answer.
type OAuthStart struct {
	BridgeID uuid.UUID `json:"bridgeId"`
	AuthURL  string    `json:"authUrl"`
}

// StartOAuth creates a disconnected storefront_a bridge of the session's
// end user and answers the authorize URL.
func (s *Service) StartOAuth(ctx context.Context, a domain.Actor, in OAuthStartInput) (OAuthStart, error) {
	sc, err := s.bridgeScope(ctx, a, ScopeBridgesWrite)
	if err != nil {
		return OAuthStart{}, err
	}
	var fe domain.FieldErrors
	shop := ""
	if in.ShopDomain == nil || strings.TrimSpace(*in.ShopDomain) == "" {
		fe.Add("shopDomain", "is required")
	} else if shop = NormalizeShop(*in.ShopDomain); shop == "" {
		fe.Add("shopDomain", "must be a shop name or its .myshopify.com domain")
	}
	name := "storefront_a " + strings.TrimSuffix(shop, ".myshopify.com")
	if in.Name != nil && strings.TrimSpace(*in.Name) != "" {
		name = strings.TrimSpace(*in.Name)
		fe.MaxLen("name", name, 100)
	}
	if !sc.typeAllowed(platforms.TypeStorefrontA) {
		fe.Add("type", "storefront_a is not allowed for this session")
	}
	if err := fe.Err(); err != nil {
		return OAuthStart{}, err
	}
	if s.sfa.ClientID == "" || s.sfa.ClientSecret == "" {
		return OAuthStart{}, domain.Unavailable("storefront_a OAuth is not configured (FOS_STOREFRONT_A_CLIENT_ID, FOS_STOREFRONT_A_CLIENT_SECRET)", nil)
	}
	b, err := s.insertBridge(ctx, sc, platforms.TypeStorefrontA, name, map[string]any{"shopDomain": shop,
		platforms.ConfigEnabledWebhooks: []string{}, platforms.ConfigRegisteredWebhooks: map[string]any{}},
		store.BridgeDisconnected, "bridge.oauth_started")
	if err != nil {
		return OAuthStart{}, err
	}
	state := randomToken("", 24)
	eu, sid := sc.endUser(), sc.session.ID
	if err := store.CreateEmbedOAuthState(ctx, s.store.Pool, hashToken(state), store.EmbedOAuthState{
		OrganizationID: a.OrganizationID, BridgeID: b.ID, EndUserID: &eu, SessionID: &sid, Shop: shop,
		ExpiresAt: s.now().Add(OAuthStateTTL),
	}); err != nil {
		return OAuthStart{}, err
	}
	q := url.Values{}
	q.Set("client_id", s.sfa.ClientID)
	q.Set("scope", s.sfa.Scopes)
	q.Set("redirect_uri", strings.TrimRight(s.baseURL, "/")+CallbackPath)
	q.Set("state", state)
	if s.sfa.BaseURL != "" {
		// The host no longer names the shop (CONTRACT 8b).
		q.Set("shop", shop)
	}
	return OAuthStart{BridgeID: b.ID, AuthURL: s.shopRoot(shop) + "/admin/oauth/authorize?" + q.Encode()}, nil
}

func (s *Service) shopRoot(shop string) string {
	if s.sfa.BaseURL != "" {
		return strings.TrimRight(s.sfa.BaseURL, "/")
	}
	return "https://" + shop
}

// QueryHMAC is storefront_a's signature of a redirect query: hex
// HMAC-SHA256 with the client secret of the parameters other than hmac
// and signature, sorted, as k=v joined by &.
func QueryHMAC(secret string, q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		if k != "hmac" && k != "signature" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+strings.Join(q[k], ","))
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strings.Join(parts, "&")))
	return hex.EncodeToString(m.Sum(nil))
}

// ExchangeInput is the code exchange's input.
type ExchangeInput struct {
	OrganizationID uuid.UUID  `json:"organizationId"`
	BridgeID       uuid.UUID  `json:"bridgeId"`
	EndUserID      *uuid.UUID `json:"endUserId"`
	SessionID      *uuid.UUID `json:"sessionId"`
	Shop           string     `json:"shop"`
	Code           string     `json:"code"`
	IPAddress      string     `json:"ipAddress"`
}

// ExchangeResult is its outcome.
type ExchangeResult struct {
	BridgeID uuid.UUID `json:"bridgeId"`
}

// CompleteOAuth is the public callback: it refuses a bad HMAC, an unknown,
// used or expired state and a shop other than the state's without changing
// the bridge, then has the code exchanged.
func (s *Service) CompleteOAuth(ctx context.Context, q url.Values) (ExchangeResult, error) {
	if s.sfa.ClientSecret == "" {
		return ExchangeResult{}, domain.Unavailable("storefront_a OAuth is not configured", nil)
	}
	got, err := hex.DecodeString(q.Get("hmac"))
	want, _ := hex.DecodeString(QueryHMAC(s.sfa.ClientSecret, q))
	if err != nil || len(got) == 0 || !hmac.Equal(got, want) {
		return ExchangeResult{}, &domain.Error{Kind: domain.KindUnauthorized, Code: "invalid_signature", Message: "the callback's hmac does not match"}
	}
	state, code := q.Get("state"), q.Get("code")
	if state == "" || code == "" || len(code) > 512 || len(state) > 512 {
		return ExchangeResult{}, domain.InvalidCode("invalid_state", "the callback lacks its state or code")
	}
	hash := hashToken(state)
	st, err := store.EmbedOAuthStateByHash(ctx, s.store.Pool, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ExchangeResult{}, domain.InvalidCode("invalid_state", "unknown state")
	case err != nil:
		return ExchangeResult{}, err
	case st.UsedAt != nil:
		return ExchangeResult{}, domain.InvalidCode("invalid_state", "this state was already used")
	case !s.now().Before(st.ExpiresAt):
		return ExchangeResult{}, domain.InvalidCode("invalid_state", "this state has expired; start the connection again")
	}
	if shop := NormalizeShop(q.Get("shop")); shop == "" || shop != st.Shop || !strings.HasSuffix(q.Get("shop"), ".myshopify.com") {
		return ExchangeResult{}, domain.InvalidCode("invalid_shop", "the callback names another shop than the one being connected")
	}
	if _, err := store.ConsumeEmbedOAuthState(ctx, s.store.Pool, hash, s.now()); err != nil {
		return ExchangeResult{}, domain.InvalidCode("invalid_state", "this state was already used or has expired")
	}
	if s.oauth == nil {
		return ExchangeResult{}, domain.WorkflowsUnavailable(nil)
	}
	in := ExchangeInput{OrganizationID: st.OrganizationID, BridgeID: st.BridgeID, EndUserID: st.EndUserID, SessionID: st.SessionID, Shop: st.Shop, Code: code}
	if ip := clientIP(ctx); ip != nil {
		in.IPAddress = *ip
	}
	return s.oauth.ExchangeOAuthCode(ctx, in)
}

// tokenAnswer is the platform's token endpoint answer.
type tokenAnswer struct {
	AccessToken      string `json:"access_token"`
	Scope            string `json:"scope"`
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// ExchangeOAuthCode exchanges an authorization code for the shop's access
// token, stores it sealed, makes the bridge active, logs bridge.created
// and queues bridge.connected. It is the body of the exchange activity: a
// bridge already active with a token is left as it is (an activity run
// again). A refusal of the platform is Upstream (not retryable: a code is
// single-use); a connection that never reached it is Unavailable. The
// token is never logged.
func (s *Service) ExchangeOAuthCode(ctx context.Context, in ExchangeInput) (ExchangeResult, error) {
	b, err := store.BridgeByID(ctx, s.store.Pool, in.OrganizationID, in.BridgeID)
	if err != nil {
		return ExchangeResult{}, notFoundAs(err, "bridge")
	}
	if b.Status == store.BridgeActive && len(b.Credentials) > 0 {
		return ExchangeResult{BridgeID: b.ID}, nil
	}
	body, _ := json.Marshal(map[string]string{"client_id": s.sfa.ClientID, "client_secret": s.sfa.ClientSecret, "code": in.Code})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.shopRoot(in.Shop)+"/admin/oauth/access_token", bytes.NewReader(body))
	if err != nil {
		return ExchangeResult{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if s.sfa.BaseURL != "" {
		req.Header.Set("X-Shopify-Shop-Domain", in.Shop)
	}
	resp, err := s.tokenClient.Do(req)
	if err != nil {
		return ExchangeResult{}, domain.Unavailable("storefront_a could not be reached", errors.New("token request failed"))
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var ans tokenAnswer
	_ = json.Unmarshal(raw, &ans)
	if resp.StatusCode != http.StatusOK || ans.AccessToken == "" {
		msg := ans.ErrorDescription
		if msg == "" {
			msg = ans.Error
		}
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		return ExchangeResult{}, domain.Upstream("platform_error", fmt.Sprintf("storefront_a refused the authorization (%d): %s", resp.StatusCode, domain.TenantText(msg)), nil)
	}
	full, err := store.BridgeFullConfig(s.secrets, b)
	if err != nil {
		return ExchangeResult{}, err
	}
	full["shopDomain"] = in.Shop
	full["accessToken"] = ans.AccessToken
	config, creds, err := store.SplitBridgeConfig(s.secrets, store.BridgeCredentialsAD(b.OrganizationID, b.ID), b.Type, full)
	if err != nil {
		return ExchangeResult{}, err
	}
	if in.IPAddress != "" {
		ctx = WithClientIP(ctx, in.IPAddress)
	}
	active := store.BridgeActive
	err = s.store.InTx(ctx, func(tx pgx.Tx) error {
		nb, err := store.UpdateBridge(ctx, tx, b.OrganizationID, b.ID, store.BridgePatch{Status: &active, Config: config, Credentials: creds})
		if err != nil {
			return notFoundAs(err, "bridge")
		}
		if err := s.logEvent(ctx, tx, b.OrganizationID, in.EndUserID, in.SessionID, "bridge.created", "bridge", b.ID.String(),
			map[string]any{"type": b.Type, "via": "oauth", "shop": in.Shop}); err != nil {
			return err
		}
		if in.EndUserID != nil {
			return store.EnqueueEmbedEvent(ctx, tx, b.OrganizationID, *in.EndUserID, "bridge.connected", s.ToBridge(nb, in.EndUserID, false))
		}
		return nil
	})
	return ExchangeResult{BridgeID: b.ID}, err
}
