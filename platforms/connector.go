package platforms

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Bridge is what a connector needs to talk to a platform on behalf of one bridge.
type Bridge struct {
	ID             uuid.UUID
	OrganizationID uuid.UUID
	Type           string
	// Config is the bridge's decrypted config with camelCase keys.
	Config map[string]any
}

// Connector talks to one kind of external platform.
type Connector interface {
	// FetchOrder re-reads one order from the platform by its external id.
	// An order the platform does not know yields an error matching
	// ErrOrderNotFound (errors.Is).
	FetchOrder(ctx context.Context, b Bridge, externalID string) (*Order, error)
	// ListOrders pages through orders updated since a time (zero: all). Pass
	// the returned next cursor back to get the following page; next is ""
	// on the last page.
	ListOrders(ctx context.Context, b Bridge, since time.Time, cursor string) (orders []Order, next string, err error)
}

// Normalized order statuses.
const (
	StatusPending    = "pending"
	StatusConfirmed  = "confirmed"
	StatusProcessing = "processing"
	StatusShipped    = "shipped"
	StatusDelivered  = "delivered"
	StatusCancelled  = "cancelled"
	StatusRefunded   = "refunded"
	StatusOnHold     = "on_hold"
)

// Normalized payment statuses.
const (
	PaymentPending       = "pending"
	PaymentAuthorized    = "authorized"
	PaymentPaid          = "paid"
	PaymentPartiallyPaid = "partially_paid"
	PaymentRefunded      = "refunded"
	PaymentVoided        = "voided"
)

// Normalized fulfillment statuses.
const (
	FulfillmentUnfulfilled = "unfulfilled"
	FulfillmentPartial     = "partial"
	FulfillmentFulfilled   = "fulfilled"
)

// Order is a platform order mapped onto the service's order fields.
type Order struct {
	ExternalID        string         `json:"externalId"`
	OrderNumber       string         `json:"orderNumber"`
	Status            string         `json:"status"`
	PaymentStatus     string         `json:"paymentStatus"`
	FulfillmentStatus string         `json:"fulfillmentStatus"`
	Customer          Customer       `json:"customer"`
	ShippingAddress   *Address       `json:"shippingAddress"`
	BillingAddress    *Address       `json:"billingAddress"`
	LineItems         []LineItem     `json:"lineItems"`
	Totals            Totals         `json:"totals"`
	Currency          string         `json:"currency"`
	Tags              []string       `json:"tags"`
	Note              string         `json:"note"`
	OrderedAt         time.Time      `json:"orderedAt"`
	UpdatedAt         time.Time      `json:"updatedAt"`
	SourceData        map[string]any `json:"sourceData"`
}

// Customer is the buyer of an order.
type Customer struct {
	Email     string `json:"email"`
	FirstName string `json:"firstName"`
	LastName  string `json:"lastName"`
	Phone     string `json:"phone"`
}

// Address is a shipping or billing address.
type Address struct {
	Name         string `json:"name"`
	Company      string `json:"company"`
	Address1     string `json:"address1"`
	Address2     string `json:"address2"`
	City         string `json:"city"`
	Province     string `json:"province"`
	ProvinceCode string `json:"provinceCode"`
	Country      string `json:"country"`
	CountryCode  string `json:"countryCode"`
	Zip          string `json:"zip"`
	Phone        string `json:"phone"`
}

// LineItem is one order line.
type LineItem struct {
	// ExternalID is the platform's id of the line (needed to push fulfillments).
	ExternalID       string  `json:"externalId"`
	SKU              string  `json:"sku"`
	Name             string  `json:"name"`
	Quantity         int     `json:"quantity"`
	UnitPrice        float64 `json:"unitPrice"`
	TotalPrice       float64 `json:"totalPrice"`
	RequiresShipping bool    `json:"requiresShipping"`
	Taxable          bool    `json:"taxable"`
}

// Totals are an order's money amounts; Total = Subtotal - Discount +
// Shipping + Tax.
type Totals struct {
	Subtotal float64 `json:"subtotal"`
	Shipping float64 `json:"shipping"`
	Tax      float64 `json:"tax"`
	Discount float64 `json:"discount"`
	Total    float64 `json:"total"`
}

// Error codes of *Error.
const (
	CodeOrderNotFound       = "order_not_found"
	CodeNotFound            = "not_found"
	CodeUnauthorized        = "unauthorized"
	CodeForbidden           = "forbidden"
	CodeRateLimited         = "rate_limited"
	CodePlatformUnavailable = "platform_unavailable"
	CodePlatformError       = "platform_error"
	CodeInvalidConfig       = "invalid_config"
	CodeInvalidRequest      = "invalid_request"
	CodeBadResponse         = "bad_response"
	CodeNetwork             = "network_error"
	CodeUnsupportedType     = "unsupported_type"
)

// ErrOrderNotFound matches (errors.Is) an *Error reporting that the platform
// does not know the order. Such an error is not retryable.
var ErrOrderNotFound = errors.New("platforms: order not found")

// ErrUnauthorized matches (errors.Is) an *Error reporting that the platform
// refused the bridge's credentials (HTTP 401/403). Not retryable.
var ErrUnauthorized = errors.New("platforms: credentials refused")

// Error is a failed platform call. StatusCode is the platform's HTTP status
// (0 when no response was received). Retryable tells whether the same call
// may succeed later (network errors, 429, 5xx).
type Error struct {
	StatusCode int
	Code       string
	Message    string
	Retryable  bool
	// Field names the bridge config key an invalid_config error is about
	// ("shopDomain"), when it is about one.
	Field string
	cause error
}

// Error implements error.
func (e *Error) Error() string {
	if e.StatusCode > 0 {
		return fmt.Sprintf("platform error %d %s: %s", e.StatusCode, e.Code, e.Message)
	}
	return fmt.Sprintf("platform error %s: %s", e.Code, e.Message)
}

// Unwrap returns the underlying cause (a network or context error), if any.
func (e *Error) Unwrap() error { return e.cause }

// Is lets errors.Is match ErrOrderNotFound, ErrUnauthorized and
// ErrNotAvailable.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrOrderNotFound:
		return e.Code == CodeOrderNotFound
	case ErrUnauthorized:
		return e.Code == CodeUnauthorized || e.Code == CodeForbidden
	case ErrNotAvailable:
		return e.Code == CodeNotAvailable
	}
	return false
}

// IsRetryable reports whether err is worth retrying: an *Error with
// Retryable set, or any error that is not an *Error (unknown failures are
// retried by default).
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Retryable
	}
	return true
}

// Registry maps bridge types to connectors. It is safe for concurrent use.
type Registry struct {
	mu         sync.RWMutex
	connectors map[string]Connector
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{connectors: map[string]Connector{}}
}

// Register sets the connector of a bridge type, replacing any earlier one.
func (r *Registry) Register(bridgeType string, c Connector) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.connectors[bridgeType] = c
}

// Get returns the connector of a bridge type, or a non-retryable *Error with
// code unsupported_type.
func (r *Registry) Get(bridgeType string) (Connector, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.connectors[bridgeType]
	if !ok {
		return nil, &Error{Code: CodeUnsupportedType, Message: fmt.Sprintf("no connector for bridge type %q", bridgeType)}
	}
	return c, nil
}

// Types lists the registered bridge types, sorted.
func (r *Registry) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return sortedKeys(r.connectors)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
