"""Bench tool `order`: a realistic order (customer, address, 20 line items).

The input schema uses what real tool schemas use: nested objects, enums,
patterns, `uuid`/`email`/`date`/`date-time` formats, minimum/maximum,
uniqueItems and a default, so validation is a real part of the call.
A request with 20 line items is about 3.7 KB.
"""

from kindgi import tool

ADDRESS = {
    "type": "object",
    "properties": {
        "line1": {"type": "string", "minLength": 1, "maxLength": 200},
        "line2": {"type": "string", "maxLength": 200},
        "city": {"type": "string", "minLength": 1, "maxLength": 100},
        "postalCode": {"type": "string", "pattern": "^[0-9]{5}(-[0-9]{4})?$"},
        "country": {"type": "string", "enum": ["US", "CA", "GB", "FR", "DE", "JP"]},
    },
    "required": ["line1", "city", "postalCode", "country"],
    "additionalProperties": False,
}

CUSTOMER = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "name": {"type": "string", "minLength": 1, "maxLength": 200},
        "email": {"type": "string", "format": "email"},
        "phone": {"type": "string", "pattern": "^\\+[1-9][0-9]{7,14}$"},
        "tier": {"type": "string", "enum": ["basic", "silver", "gold", "platinum"]},
    },
    "required": ["id", "name", "email", "tier"],
    "additionalProperties": False,
}

LINE_ITEM = {
    "type": "object",
    "properties": {
        "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
        "name": {"type": "string", "minLength": 1, "maxLength": 120},
        "category": {
            "type": "string",
            "enum": ["books", "garden", "kitchen", "office", "toys", "tools"],
        },
        "quantity": {"type": "integer", "minimum": 1, "maximum": 1000},
        "unitPriceCents": {"type": "integer", "minimum": 0, "maximum": 10000000},
        "giftWrap": {"type": "boolean", "default": False},
    },
    "required": ["sku", "name", "category", "quantity", "unitPriceCents"],
    "additionalProperties": False,
}

INPUT = {
    "type": "object",
    "properties": {
        "orderId": {"type": "string", "format": "uuid"},
        "placedAt": {"type": "string", "format": "date-time"},
        "deliverBy": {"type": "string", "format": "date"},
        "currency": {"type": "string", "enum": ["USD", "CAD", "GBP", "EUR", "JPY"]},
        "priority": {"type": "string", "enum": ["low", "normal", "high"], "default": "normal"},
        "customer": CUSTOMER,
        "shippingAddress": ADDRESS,
        "items": {
            "type": "array",
            "items": LINE_ITEM,
            "minItems": 1,
            "maxItems": 100,
            "uniqueItems": True,
        },
        "note": {"type": "string", "maxLength": 2000},
    },
    "required": ["orderId", "placedAt", "currency", "customer", "shippingAddress", "items"],
    "additionalProperties": False,
}

OUTPUT = {
    "type": "object",
    "properties": {
        "orderId": {"type": "string", "format": "uuid"},
        "priority": {"type": "string", "enum": ["low", "normal", "high"]},
        "itemCount": {"type": "integer", "minimum": 0},
        "totalCents": {"type": "integer", "minimum": 0},
        "giftWrapped": {"type": "integer", "minimum": 0},
    },
    "required": ["orderId", "priority", "itemCount", "totalCents", "giftWrapped"],
    "additionalProperties": False,
}


@tool(id="order", version="1.0.0", input=INPUT, output=OUTPUT)
def order(input, ctx):
    """Total an order: its item count, total price and gift-wrapped items."""
    items = input["items"]
    return {
        "orderId": input["orderId"],
        "priority": input["priority"],
        "itemCount": sum(item["quantity"] for item in items),
        "totalCents": sum(item["quantity"] * item["unitPriceCents"] for item in items),
        "giftWrapped": sum(1 for item in items if item["giftWrap"]),
    }
