package sandboxapi

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// order is the sandbox order payload, shaped like the storefront_a REST order.
type order struct {
	ID                 int64          `json:"id"`
	AdminGraphqlAPIID  string         `json:"admin_graphql_api_id"`
	Name               string         `json:"name"`
	Number             int            `json:"number"`
	OrderNumber        int            `json:"order_number"`
	Email              string         `json:"email"`
	ContactEmail       string         `json:"contact_email"`
	Phone              string         `json:"phone"`
	CreatedAt          string         `json:"created_at"`
	UpdatedAt          string         `json:"updated_at"`
	ProcessedAt        string         `json:"processed_at"`
	ClosedAt           *string        `json:"closed_at"`
	CancelledAt        *string        `json:"cancelled_at"`
	CancelReason       *string        `json:"cancel_reason"`
	Confirmed          bool           `json:"confirmed"`
	Test               bool           `json:"test"`
	Currency           string         `json:"currency"`
	PresentmentCurr    string         `json:"presentment_currency"`
	FinancialStatus    string         `json:"financial_status"`
	FulfillmentStatus  *string        `json:"fulfillment_status"`
	Tags               string         `json:"tags"`
	Note               *string        `json:"note"`
	SourceName         string         `json:"source_name"`
	TaxesIncluded      bool           `json:"taxes_included"`
	TotalLineItems     string         `json:"total_line_items_price"`
	SubtotalPrice      string         `json:"subtotal_price"`
	TotalDiscounts     string         `json:"total_discounts"`
	TotalTax           string         `json:"total_tax"`
	TotalPrice         string         `json:"total_price"`
	TotalShippingSet   moneySet       `json:"total_shipping_price_set"`
	TotalWeight        int            `json:"total_weight"`
	DiscountCodes      []discountCode `json:"discount_codes"`
	TaxLines           []taxLine      `json:"tax_lines"`
	Customer           customer       `json:"customer"`
	BillingAddress     address        `json:"billing_address"`
	ShippingAddress    address        `json:"shipping_address"`
	LineItems          []lineItem     `json:"line_items"`
	ShippingLines      []shippingLine `json:"shipping_lines"`
	Fulfillments       []fulfillment  `json:"fulfillments"`
	Refunds            []refund       `json:"refunds"`
	PaymentGatewayName []string       `json:"payment_gateway_names"`

	updated time.Time
}

type moneySet struct {
	ShopMoney money `json:"shop_money"`
}

type money struct {
	Amount       string `json:"amount"`
	CurrencyCode string `json:"currency_code"`
}

type discountCode struct {
	Code   string `json:"code"`
	Amount string `json:"amount"`
	Type   string `json:"type"`
}

type taxLine struct {
	Price string  `json:"price"`
	Rate  float64 `json:"rate"`
	Title string  `json:"title"`
}

type customer struct {
	ID        int64  `json:"id"`
	Email     string `json:"email"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Phone     string `json:"phone"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

type address struct {
	FirstName    string  `json:"first_name"`
	LastName     string  `json:"last_name"`
	Name         string  `json:"name"`
	Company      *string `json:"company"`
	Address1     string  `json:"address1"`
	Address2     string  `json:"address2"`
	City         string  `json:"city"`
	Province     string  `json:"province"`
	ProvinceCode string  `json:"province_code"`
	Country      string  `json:"country"`
	CountryCode  string  `json:"country_code"`
	Zip          string  `json:"zip"`
	Phone        string  `json:"phone"`
}

type lineItem struct {
	ID                  int64   `json:"id"`
	ProductID           int64   `json:"product_id"`
	VariantID           int64   `json:"variant_id"`
	SKU                 string  `json:"sku"`
	Name                string  `json:"name"`
	Title               string  `json:"title"`
	VariantTitle        string  `json:"variant_title"`
	Quantity            int     `json:"quantity"`
	Price               string  `json:"price"`
	TotalDiscount       string  `json:"total_discount"`
	Grams               int     `json:"grams"`
	RequiresShipping    bool    `json:"requires_shipping"`
	Taxable             bool    `json:"taxable"`
	FulfillableQuantity int     `json:"fulfillable_quantity"`
	FulfillmentStatus   *string `json:"fulfillment_status"`
}

type shippingLine struct {
	ID     int64  `json:"id"`
	Code   string `json:"code"`
	Title  string `json:"title"`
	Price  string `json:"price"`
	Source string `json:"source"`
}

type fulfillment struct {
	ID              int64             `json:"id"`
	OrderID         int64             `json:"order_id"`
	Name            string            `json:"name"`
	Status          string            `json:"status"`
	ShipmentStatus  string            `json:"shipment_status"`
	TrackingCompany string            `json:"tracking_company"`
	TrackingNumber  string            `json:"tracking_number"`
	TrackingNumbers []string          `json:"tracking_numbers"`
	TrackingURL     string            `json:"tracking_url"`
	CreatedAt       string            `json:"created_at"`
	UpdatedAt       string            `json:"updated_at"`
	LineItems       []fulfillmentLine `json:"line_items"`
}

type fulfillmentLine struct {
	ID       int64  `json:"id"`
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
}

type refund struct {
	ID        int64  `json:"id"`
	OrderID   int64  `json:"order_id"`
	CreatedAt string `json:"created_at"`
	Note      string `json:"note"`
	Amount    string `json:"amount"`
}

// rng is a splitmix64 generator: fully deterministic across Go versions.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

func pick[T any](r *rng, xs []T) T { return xs[r.intn(len(xs))] }

// canonicalStore folds the spellings of one store key together.
func canonicalStore(store string) string {
	s := strings.ToLower(strings.TrimSpace(store))
	s = strings.TrimPrefix(s, "https://")
	s = strings.TrimPrefix(s, "http://")
	return strings.TrimRight(s, "/")
}

func storeSeed(bridgeType, store string) uint64 {
	sum := sha256.Sum256([]byte(bridgeType + "\x00" + canonicalStore(store)))
	return binary.BigEndian.Uint64(sum[:8])
}

type product struct {
	sku, title, variant string
	cents, grams        int64
	ships, taxable      bool
}

func products() []product {
	return []product{
		{"SBX-TSHIRT-BLK-M", "Classic T-Shirt", "Black / M", 2400, 180, true, true},
		{"SBX-HOODIE-GRY-L", "Pullover Hoodie", "Grey / L", 5800, 620, true, true},
		{"SBX-MUG-WHT", "Ceramic Mug", "White", 1600, 350, true, true},
		{"SBX-CAP-NVY", "Baseball Cap", "Navy", 2200, 120, true, true},
		{"SBX-BOTTLE-750", "Steel Water Bottle", "750 ml", 3200, 400, true, true},
		{"SBX-SOCKS-3PK", "Crew Socks 3-Pack", "Default", 1500, 150, true, true},
		{"SBX-TOTE-NAT", "Canvas Tote Bag", "Natural", 1900, 210, true, true},
		{"SBX-JOURNAL-A5", "Dot Grid Journal", "A5", 1400, 300, true, true},
		{"SBX-LAMP-DESK", "LED Desk Lamp", "Matte Black", 7900, 1300, true, true},
		{"SBX-BACKPACK-25L", "Commuter Backpack", "25 L", 11900, 1100, true, true},
		{"SBX-GIFTCARD-50", "Gift Card", "$50", 5000, 0, false, false},
	}
}

type place struct {
	city, province, provinceCode, zip, country, countryCode, currency string
	taxBP                                                             int64 // tax rate in basis points
}

func places() []place {
	return []place{
		{"Louisville", "Kentucky", "KY", "40202", "United States", "US", "USD", 600},
		{"Austin", "Texas", "TX", "78701", "United States", "US", "USD", 825},
		{"Denver", "Colorado", "CO", "80202", "United States", "US", "USD", 290},
		{"Portland", "Oregon", "OR", "97205", "United States", "US", "USD", 0},
		{"Brooklyn", "New York", "NY", "11201", "United States", "US", "USD", 888},
		{"Chicago", "Illinois", "IL", "60601", "United States", "US", "USD", 625},
		{"Miami", "Florida", "FL", "33130", "United States", "US", "USD", 600},
		{"Seattle", "Washington", "WA", "98101", "United States", "US", "USD", 650},
		{"San Francisco", "California", "CA", "94103", "United States", "US", "USD", 725},
		{"Boston", "Massachusetts", "MA", "02108", "United States", "US", "USD", 625},
		{"Toronto", "Ontario", "ON", "M5V 2T6", "Canada", "CA", "CAD", 1300},
		{"Vancouver", "British Columbia", "BC", "V6B 1A1", "Canada", "CA", "CAD", 500},
	}
}

func firstNames() []string {
	return []string{"Ava", "Ben", "Chloe", "Diego", "Elena", "Farah", "Gabe", "Hana",
		"Ivan", "Jada", "Kenji", "Lena", "Marco", "Nora", "Omar", "Priya"}
}

func lastNames() []string {
	return []string{"Adams", "Baker", "Chen", "Dubois", "Evans", "Fischer", "Garcia", "Haddad",
		"Ito", "Jensen", "Kowalski", "Lopez", "Moreau", "Novak", "Okafor", "Patel"}
}

func streets() []string {
	return []string{"Chestnut Street", "Maple Avenue", "Oak Lane", "Elm Street", "Cedar Road",
		"Harbor Drive", "Park Place", "Willow Way", "Lakeview Terrace", "Mill Road"}
}

func tagSets() []string {
	return []string{"", "", "vip", "wholesale", "gift", "repeat-customer", "", "priority"}
}

// scenario is an order's payment/fulfillment state.
type scenario struct {
	financial   string
	fulfillment string // "", "partial", "fulfilled"
	shipment    string // shipment_status of fulfillments
	cancelled   bool
	refunded    bool
}

func scenarios() []scenario {
	return []scenario{
		{financial: "pending"},
		{financial: "authorized"},
		{financial: "paid"},
		{financial: "paid", fulfillment: "partial", shipment: "in_transit"},
		{financial: "paid", fulfillment: "fulfilled", shipment: "in_transit"},
		{financial: "paid", fulfillment: "fulfilled", shipment: "delivered"},
		{financial: "voided", cancelled: true},
		{financial: "refunded", refunded: true},
		{financial: "partially_paid"},
	}
}

func cents(v int64) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	return fmt.Sprintf("%s%d.%02d", sign, v/100, v%100)
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func strPtr(s string) *string { return &s }

func buildOrder(r *rng, i int, baseID int64, created time.Time, sc scenario) order {
	id := baseID + int64(i)*7919
	number := 1001 + i
	name := "#" + strconv.Itoa(number)

	first, last := pick(r, firstNames()), pick(r, lastNames())
	email := fmt.Sprintf("%s.%s%d@example.com", strings.ToLower(first), strings.ToLower(last), r.intn(90)+10)
	phone := fmt.Sprintf("+1555%07d", r.intn(10_000_000))
	pl := pick(r, places())
	addr := address{
		FirstName: first, LastName: last, Name: first + " " + last,
		Address1:     fmt.Sprintf("%d %s", 10+r.intn(980), pick(r, streets())),
		City:         pl.city,
		Province:     pl.province,
		ProvinceCode: pl.provinceCode,
		Country:      pl.country,
		CountryCode:  pl.countryCode,
		Zip:          pl.zip,
		Phone:        phone,
	}
	if r.intn(4) == 0 {
		addr.Address2 = fmt.Sprintf("Apt %d", 1+r.intn(40))
	}
	if r.intn(6) == 0 {
		addr.Company = strPtr(last + " & Co.")
	}

	// Line items: at least two for a partially fulfilled order.
	nItems := 1 + r.intn(3)
	if sc.fulfillment == "partial" && nItems < 2 {
		nItems = 2
	}
	prods := products()
	startProd := r.intn(len(prods))
	var items []lineItem
	var subtotal, shippable, tax, grams int64
	for j := 0; j < nItems; j++ {
		p := prods[(startProd+j*3)%len(prods)]
		qty := 1 + r.intn(3)
		if !p.ships {
			qty = 1
		}
		line := p.cents * int64(qty)
		subtotal += line
		if p.ships {
			shippable += line
		}
		if p.taxable {
			tax += (line*pl.taxBP + 5000) / 10000
		}
		grams += p.grams * int64(qty)
		items = append(items, lineItem{
			ID:               id*10 + int64(j) + 1,
			ProductID:        7_000_000_000 + int64((startProd+j*3)%len(prods))*101,
			VariantID:        8_000_000_000 + int64((startProd+j*3)%len(prods))*101,
			SKU:              p.sku,
			Name:             p.title + " - " + p.variant,
			Title:            p.title,
			VariantTitle:     p.variant,
			Quantity:         qty,
			Price:            cents(p.cents),
			TotalDiscount:    "0.00",
			Grams:            int(p.grams),
			RequiresShipping: p.ships,
			Taxable:          p.taxable,
		})
	}

	var discount int64
	var codes []discountCode
	if r.intn(4) == 0 {
		discount = (subtotal + 5) / 10
		codes = append(codes, discountCode{Code: "SAVE10", Amount: cents(discount), Type: "percentage"})
	}
	var shipping int64
	shipTitle := "Free Shipping"
	if shippable > 0 && shippable < 10000 {
		shipping = 799
		shipTitle = "Standard Shipping"
	}
	total := subtotal - discount + shipping + tax

	updated := created.Add(time.Duration(30+r.intn(90)) * time.Minute)
	o := order{
		ID:                id,
		AdminGraphqlAPIID: fmt.Sprintf("gid://sandbox/Order/%d", id),
		Name:              name,
		Number:            number - 1000,
		OrderNumber:       number,
		Email:             email,
		ContactEmail:      email,
		Phone:             phone,
		CreatedAt:         ts(created),
		ProcessedAt:       ts(created),
		Confirmed:         true,
		Test:              true,
		Currency:          pl.currency,
		PresentmentCurr:   pl.currency,
		FinancialStatus:   sc.financial,
		Tags:              pick(r, tagSets()),
		SourceName:        "web",
		TotalLineItems:    cents(subtotal),
		SubtotalPrice:     cents(subtotal - discount),
		TotalDiscounts:    cents(discount),
		TotalTax:          cents(tax),
		TotalPrice:        cents(total),
		TotalShippingSet:  moneySet{ShopMoney: money{Amount: cents(shipping), CurrencyCode: pl.currency}},
		TotalWeight:       int(grams),
		DiscountCodes:     codes,
		TaxLines:          []taxLine{},
		Customer: customer{
			ID: 6_000_000_000 + int64(r.intn(900_000_000)), Email: email, FirstName: first, LastName: last,
			Phone: phone, CreatedAt: ts(created.Add(-72 * time.Hour)), UpdatedAt: ts(created),
		},
		BillingAddress:     addr,
		ShippingAddress:    addr,
		ShippingLines:      []shippingLine{{ID: id*10 + 9, Code: shipTitle, Title: shipTitle, Price: cents(shipping), Source: "sandbox"}},
		Fulfillments:       []fulfillment{},
		Refunds:            []refund{},
		PaymentGatewayName: []string{"sandbox_gateway"},
	}
	if o.DiscountCodes == nil {
		o.DiscountCodes = []discountCode{}
	}
	if tax > 0 {
		o.TaxLines = append(o.TaxLines, taxLine{Price: cents(tax), Rate: float64(pl.taxBP) / 10000, Title: pl.provinceCode + " Tax"})
	}
	if r.intn(5) == 0 {
		o.Note = strPtr("Please leave the parcel at the back door.")
	}

	// State: fulfillments, cancellation, refunds.
	switch sc.fulfillment {
	case "partial", "fulfilled":
		shippedAt := created.Add(time.Duration(12+r.intn(36)) * time.Hour)
		n := len(items)
		if sc.fulfillment == "partial" {
			n = 1
		}
		var lines []fulfillmentLine
		for j := range items {
			st := (*string)(nil)
			if j < n {
				st = strPtr("fulfilled")
				lines = append(lines, fulfillmentLine{ID: items[j].ID, SKU: items[j].SKU, Quantity: items[j].Quantity})
			} else {
				items[j].FulfillableQuantity = items[j].Quantity
			}
			items[j].FulfillmentStatus = st
		}
		tracking := fmt.Sprintf("SBX%012d", id%1_000_000_000_000)
		fUpdated := shippedAt
		if sc.shipment == "delivered" {
			fUpdated = shippedAt.Add(time.Duration(48+r.intn(72)) * time.Hour)
		}
		o.Fulfillments = []fulfillment{{
			ID: id*10 + 7, OrderID: id, Name: name + ".1", Status: "success",
			ShipmentStatus: sc.shipment, TrackingCompany: "Sandbox Carrier",
			TrackingNumber: tracking, TrackingNumbers: []string{tracking},
			TrackingURL: "https://tracking.example.com/" + tracking,
			CreatedAt:   ts(shippedAt), UpdatedAt: ts(fUpdated), LineItems: lines,
		}}
		o.FulfillmentStatus = strPtr(sc.fulfillment)
		updated = fUpdated
		if sc.fulfillment == "fulfilled" && sc.shipment == "delivered" {
			o.ClosedAt = strPtr(ts(fUpdated))
		}
	default:
		for j := range items {
			items[j].FulfillableQuantity = items[j].Quantity
		}
	}
	if sc.cancelled {
		updated = created.Add(time.Duration(2+r.intn(20)) * time.Hour)
		o.CancelledAt = strPtr(ts(updated))
		o.CancelReason = strPtr("customer")
		o.ClosedAt = strPtr(ts(updated))
		for j := range items {
			items[j].FulfillableQuantity = 0
		}
	}
	if sc.refunded {
		updated = created.Add(time.Duration(24+r.intn(96)) * time.Hour)
		o.Refunds = []refund{{ID: id*10 + 8, OrderID: id, CreatedAt: ts(updated), Note: "Customer returned the items", Amount: cents(total)}}
		o.ClosedAt = strPtr(ts(updated))
	}
	o.LineItems = items
	o.UpdatedAt = ts(updated)
	o.updated = updated
	return o
}
