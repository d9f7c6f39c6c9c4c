package sandbox

// SampleOrder returns an order as the API renders it (about 4 KB): five
// line items, addresses, totals, tags, metadata and the platform's source
// data. The save check runs a transformation over it (CheckFor).
func SampleOrder() []byte { return []byte(sampleOrderJSON) }

const sampleOrderJSON = `{
  "id": "0b9f3c1e-6a7d-4d2b-9a51-2f4f2f0f7c11", "organizationId": "5c1d4f0e-1b2a-4c3d-8e9f-0a1b2c3d4e5f",
  "bridgeId": "7e8f9a0b-1c2d-4e3f-9a8b-7c6d5e4f3a2b", "externalId": "1001", "orderNumber": "#1001",
  "status": "pending", "financialStatus": "paid", "fulfillmentStatus": null, "currency": "USD",
  "customer": {"email": "bea@example.com", "firstName": "Bea", "lastName": "Arthur", "phone": "+1 555 0100"},
  "shippingAddress": {"name": "Bea Arthur", "company": null, "address1": "1 Main St", "address2": "Apt 4",
    "city": "Springfield", "province": "IL", "zip": "62701", "country": "US", "phone": "+1 555 0100"},
  "billingAddress": {"name": "Bea Arthur", "address1": "1 Main St", "city": "Springfield", "province": "IL", "zip": "62701", "country": "US"},
  "lineItems": [
    {"sku": "MUG-1", "name": "Mug", "quantity": 2, "unitPrice": 9.5, "totalPrice": 19, "weight": 0.4, "requiresShipping": true, "taxable": true, "properties": {"color": "blue"}},
    {"sku": "TEE-M", "name": "T-shirt M", "quantity": 1, "unitPrice": 20, "totalPrice": 20, "weight": 0.2, "requiresShipping": true, "taxable": true, "properties": {"size": "M"}},
    {"sku": "CAP-1", "name": "Cap", "quantity": 1, "unitPrice": 15, "totalPrice": 15, "weight": 0.1, "requiresShipping": true, "taxable": true, "properties": {}},
    {"sku": "GIFT", "name": "Gift card", "quantity": 1, "unitPrice": 25, "totalPrice": 25, "weight": 0, "requiresShipping": false, "taxable": false, "properties": {}},
    {"sku": "STK-5", "name": "Sticker pack", "quantity": 5, "unitPrice": 2, "totalPrice": 10, "weight": 0.05, "requiresShipping": true, "taxable": true, "properties": {"pack": "5"}}
  ],
  "totals": {"subtotal": 89, "shipping": 5, "tax": 7.12, "discount": 0, "total": 101.12},
  "tags": ["vip", "repeat"], "notes": "Leave at the door",
  "metadata": {"channel": "web", "campaign": "spring"},
  "sourceData": {"id": 5512345678901, "admin_graphql_api_id": "gid://shopify/Order/5512345678901", "browser_ip": "203.0.113.9",
    "gateway": "shopify_payments", "landing_site": "/products/mug", "referring_site": "https://www.example.com/",
    "shipping_lines": [{"code": "Standard", "price": "5.00", "source": "shopify"}],
    "note_attributes": [{"name": "gift", "value": "no"}]},
  "createdAt": "2026-11-24T07:00:00Z", "updatedAt": "2026-11-24T07:00:00Z"
}`
