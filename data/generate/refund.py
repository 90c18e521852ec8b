"""The refund transcript: a support agent whose refund is declined by the payment processor."""

from __future__ import annotations

from .common import (
    Call,
    Transcript,
    prose,
    tool,
)

# =============================================================================================
# refund: a support agent whose refund is declined by the payment processor
#
# Nine laps. The refund to the original card fails with a permanent decline code
# (card_account_closed); the agent does not retry the dead card, checks the policy and
# escalates to billing with the reason, then tells the customer what happens next.
# =============================================================================================

REFUND_ORDER = "FH-20931-7744"
REFUND_CUSTOMER = "cus_7Q2M4X81"
REFUND_DECLINE = "card_account_closed"

REFUND_SYSTEM = prose(
    """
    You are the customer support agent for Fernhill Outdoor Co., an online outdoor-gear shop.
    You help customers by email with orders, deliveries, returns and refunds, using the tools
    provided. Today is Friday 31 May 2024.

    Refund policy (summary of KB-200; search the policy base for details):
    - Refunds are allowed within 30 days of delivery for returned items the warehouse has
      received, and for items that arrived damaged or defective.
    - For damaged or defective items, refund the item, its sales tax and the original shipping.
      Never refund more than was paid for the items returned.
    - Refunds go to the original payment method.
    - If a refund fails, read the decline code. Retry once only when the processor marks it
      retryable. Never move a refund to another card, a bank account or store credit on your
      own: that needs the customer's written consent and a billing specialist (queue
      billing-refunds).
    - Record every action you take in an order note.

    Write to the customer in plain, warm English, say what you did and what happens next with
    dates, and sign as "Fernhill Support". Do not promise anything the tools have not
    confirmed.
    """
)

REFUND_TOOLS = [
    tool(
        "lookup_order",
        "Fetch an order by its number (FH-xxxxx-xxxx): customer, items with SKU, price and "
        "tax, shipping, payment details (method, processor, charge id) and delivery status.",
        {"order_id": {"type": "string", "description": "Order number, e.g. FH-20931-7744."}},
        ["order_id"],
    ),
    tool(
        "get_return",
        "Look up a return by RMA number or by the return shipment's tracking number: "
        "carrier events, warehouse receipt, inspection result and items received.",
        {"rma_or_tracking": {"type": "string"}},
        ["rma_or_tracking"],
    ),
    tool(
        "check_refund_eligibility",
        "Check items of an order against the refund policy and compute the refundable amount "
        "(item price, item tax and, for damaged or defective items, original shipping).",
        {
            "order_id": {"type": "string"},
            "skus": {"type": "array", "items": {"type": "string"},
                     "description": "SKUs being refunded."},
            "reason": {"type": "string",
                       "enum": ["damaged_in_transit", "defective", "changed_mind", "wrong_item",
                                "not_delivered"]},
        },
        ["order_id", "skus", "reason"],
    ),
    tool(
        "issue_refund",
        "Send a refund to the order's original payment method through the payment processor "
        "(Tessera Payments). Returns the refund id on success or the processor's decline code "
        "and whether a retry can succeed. Idempotent per idempotency_key.",
        {
            "order_id": {"type": "string"},
            "amount": {"type": "number", "description": "Amount in the order's currency."},
            "currency": {"type": "string", "default": "USD"},
            "reason": {"type": "string"},
            "idempotency_key": {"type": "string"},
        },
        ["order_id", "amount", "reason", "idempotency_key"],
    ),
    tool(
        "get_customer",
        "Fetch a customer's profile: contact details, preferred language, payment methods on "
        "file, store-credit balance and recent support contacts.",
        {"customer_id": {"type": "string"}},
        ["customer_id"],
    ),
    tool(
        "search_policy",
        "Search the internal policy base (KB articles) and return the best-matching article "
        "in full.",
        {"query": {"type": "string"}},
        ["query"],
    ),
    tool(
        "create_billing_escalation",
        "Open a ticket for the billing specialists (queue billing-refunds) when a refund needs "
        "manual handling. Returns the ticket id and its service-level target.",
        {
            "order_id": {"type": "string"},
            "amount": {"type": "number"},
            "summary": {"type": "string"},
            "decline_code": {"type": "string"},
            "customer_options": {"type": "array", "items": {"type": "string"},
                                 "description": "Refund routes to offer the customer."},
            "priority": {"type": "string", "enum": ["low", "normal", "high"]},
        },
        ["order_id", "amount", "summary", "priority"],
    ),
    tool(
        "add_order_note",
        "Append an internal note to an order's timeline (visible to staff only).",
        {"order_id": {"type": "string"}, "note": {"type": "string"}},
        ["order_id", "note"],
    ),
]


def _refund_order() -> dict:
    return {
        "order_id": REFUND_ORDER,
        "placed_at": "2024-05-02T18:41:07-07:00",
        "customer": {"id": REFUND_CUSTOMER, "name": "Priya Raman",
                     "email": "priya.raman@example.net"},
        "channel": "web",
        "currency": "USD",
        "shipping_address": {"name": "Priya Raman", "line1": "2417 Alder Creek Way",
                             "city": "Sacramento", "region": "CA", "postal_code": "95818",
                             "country": "US"},
        "billing_address": "same as shipping",
        "items": [
            {"sku": "TNT-RDG2-GRN", "name": "Ridgeline 2 backpacking tent, fern green",
             "qty": 1, "unit_price": 289.00, "tax": 20.95},
            {"sku": "FTP-RDG2", "name": "Ridgeline 2 footprint", "qty": 1,
             "unit_price": 39.00, "tax": 2.83},
        ],
        "shipping": {"method": "UPS Ground", "charged": 12.95, "tax": 0.00},
        "tax_rate": "7.25% (CA, Sacramento County)",
        "total_paid": 364.73,
        "payment": {"method": "card", "brand": "visa", "funding": "credit", "last4": "4417",
                    "exp": "09/2026", "cardholder": "PRIYA RAMAN",
                    "processor": "tessera", "charge_id": "ch_3PbX9rT2eWq0LmA7",
                    "authorized_at": "2024-05-02T18:41:09-07:00",
                    "captured_at": "2024-05-02T18:41:12-07:00", "status": "captured",
                    "avs": "Y", "cvc_check": "pass", "risk_score": 12,
                    "refunded": 0.00, "disputes": []},
        "fulfilment": {"warehouse": "RNO-1", "shipped_at": "2024-05-03T11:02:40-07:00",
                       "carrier": "UPS", "tracking": "1Z8A0W470388120935",
                       "delivered_at": "2024-05-06T14:17:00-07:00", "status": "delivered"},
        "returns": [{"rma": "RMA-55102", "created_at": "2024-05-23T09:12:51-07:00",
                     "items": ["TNT-RDG2-GRN"], "reason_given": "arrived damaged"}],
        "timeline": [
            {"at": "2024-05-02T18:41:12-07:00", "event": "order placed, payment captured"},
            {"at": "2024-05-02T18:41:40-07:00", "event": "order confirmation emailed"},
            {"at": "2024-05-03T07:15:02-07:00", "event": "picked at RNO-1 (2 units, 1 box)"},
            {"at": "2024-05-03T11:02:40-07:00", "event": "shipped, UPS 1Z8A0W470388120935"},
            {"at": "2024-05-06T14:17:00-07:00", "event": "delivered, left at front door"},
            {"at": "2024-05-23T09:05:40-07:00", "event": "customer email: tent arrived damaged"},
            {"at": "2024-05-23T09:12:51-07:00", "event": "RMA-55102 created for TNT-RDG2-GRN"},
            {"at": "2024-05-28T13:06:22-07:00", "event": "return received at RNO-1"},
            {"at": "2024-05-29T08:47:10-07:00", "event": "return inspected: damaged_in_transit"},
        ],
        "notes": [
            {"at": "2024-05-23T09:14:03-07:00", "by": "support:auto",
             "text": "Prepaid return label emailed for RMA-55102 (damage reported with 3 photos)."},
        ],
    }


def _refund_return() -> dict:
    return {
        "rma": "RMA-55102",
        "order_id": REFUND_ORDER,
        "carrier": "UPS",
        "tracking": "1Z8A0W470392771546",
        "events": [
            {"at": "2024-05-24T16:05:00-07:00", "where": "Sacramento, CA",
             "event": "Drop-off at UPS Access Point"},
            {"at": "2024-05-25T03:44:00-07:00", "where": "West Sacramento, CA",
             "event": "Departed facility"},
            {"at": "2024-05-27T22:10:00-07:00", "where": "Sparks, NV", "event": "Arrived at facility"},
            {"at": "2024-05-28T10:31:00-07:00", "where": "Reno, NV",
             "event": "Delivered to RNO-1 receiving dock"},
        ],
        "received": {"at": "2024-05-28T13:06:22-07:00", "by": "rno1-recv-04",
                     "items": [{"sku": "TNT-RDG2-GRN", "qty": 1}]},
        "inspection": {
            "at": "2024-05-29T08:47:10-07:00",
            "inspector": "rno1-qa-11",
            "result": "damaged_in_transit",
            "detail": "2 of 9 pole segments fractured at the ferrules; outer box crushed on one "
                      "corner; canopy and fly intact and unused.",
            "restock": False,
            "disposition": "vendor claim VC-8812 (Ridgeline supplier)",
            "refund_recommendation": "approve",
            "checklist": {"packaging": "original box, crushed corner",
                          "components_present": "tent body, fly, 9 pole segments, 14 stakes, "
                                                "3 guylines, stuff sack",
                          "signs_of_use": "none", "photos": ["qa/55102-1.jpg", "qa/55102-2.jpg",
                                                             "qa/55102-3.jpg"]},
        },
    }


def _refund_eligibility() -> dict:
    return {
        "order_id": REFUND_ORDER,
        "eligible": True,
        "policy": "KB-200 section 3 (damaged or defective items)",
        "days_since_delivery": 25,
        "window_days": 30,
        "lines": [
            {"sku": "TNT-RDG2-GRN", "item": 289.00, "tax": 20.95, "eligible": True,
             "basis": "returned, inspection result damaged_in_transit"},
        ],
        "shipping_refund": {"amount": 12.95,
                            "basis": "damaged item: original shipping refundable"},
        "not_included": [{"sku": "FTP-RDG2", "reason": "not returned"}],
        "refundable_total": 322.90,
        "currency": "USD",
        "destination": "original payment method (visa ending 4417, charge ch_3PbX9rT2eWq0LmA7)",
    }


def _refund_decline() -> dict:
    return {
        "error": "refund_declined",
        "processor": "tessera",
        "http_status": 402,
        "decline_code": REFUND_DECLINE,
        "message": "The card issuer rejected the refund: the card account ending 4417 has been "
                   "closed. Refunds to this card cannot succeed; send the funds to another "
                   "destination.",
        "retryable": False,
        "refund_attempt_id": "rfa_1Pc0Hq8Zk3VnY5dE",
        "charge_id": "ch_3PbX9rT2eWq0LmA7",
        "amount": 322.90,
        "currency": "USD",
        "processor_request_id": "req_b7E2kQ9xW4mTz1",
        "at": "2024-05-31T10:22:48-07:00",
    }


def _refund_customer() -> dict:
    return {
        "id": REFUND_CUSTOMER,
        "name": "Priya Raman",
        "email": "priya.raman@example.net",
        "phone": "+1 916 555 0148",
        "language": "en-US",
        "customer_since": "2019-08-14",
        "orders_count": 11,
        "lifetime_value": 1893.40,
        "payment_methods": [
            {"id": "pm_visa_4417", "brand": "visa", "last4": "4417", "exp": "09/2026",
             "added_at": "2021-03-02", "default": False, "status": "active"},
            {"id": "pm_mc_0923", "brand": "mastercard", "last4": "0923", "exp": "04/2029",
             "added_at": "2024-05-19", "default": True, "status": "active"},
        ],
        "store_credit": {"balance": 0.00, "currency": "USD"},
        "orders": [
            {"order_id": "FH-20931-7744", "placed": "2024-05-02", "total": 364.73,
             "status": "delivered, partial return open"},
            {"order_id": "FH-20114-1290", "placed": "2024-03-17", "total": 84.50,
             "status": "delivered"},
            {"order_id": "FH-19872-5531", "placed": "2023-11-26", "total": 212.00,
             "status": "delivered"},
            {"order_id": "FH-19540-0087", "placed": "2023-08-09", "total": 46.95,
             "status": "delivered"},
            {"order_id": "FH-19107-3318", "placed": "2023-04-30", "total": 398.00,
             "status": "delivered, returned (size exchange)"},
            {"order_id": "FH-18766-9042", "placed": "2022-12-04", "total": 129.99,
             "status": "delivered"},
        ],
        "recent_contacts": [
            {"at": "2024-05-23T09:05:40-07:00", "channel": "email",
             "subject": "Tent arrived with broken poles", "resolution": "return label sent"},
        ],
        "flags": [],
    }


def _refund_policy_article() -> dict:
    return {
        "id": "KB-214",
        "title": "When a refund to the original payment method fails",
        "updated": "2024-02-12",
        "owner": "Billing Operations",
        "body": prose(
            """
            1. Read the processor's decline code and its retryable flag. Temporary codes
               (processing_error, issuer_unavailable, try_again_later) may be retried once
               after 30 minutes with a new idempotency key. Permanent codes (card_closed,
               account closed or frozen, lost_or_stolen, do_not_honor on a refund) must not be
               retried: a second attempt fails the same way and adds a processor fee.
            2. Do not send the refund to another card on file, a bank account or store credit
               yourself. A different destination needs (a) the customer's written consent
               naming that destination and (b) a billing specialist, who checks that the
               cardholder name matches and logs the change for the auditors (fraud control
               FC-7).
            3. Open a billing escalation in the billing-refunds queue with the order, the
               amount, the decline code and the routes the customer may choose from: another
               card in their name, an ACH transfer to a US bank account, or store credit with a
               10% bonus. Priority high when the amount is over $250 or the customer has
               waited more than 7 days since the return arrived.
            4. Tell the customer the same day: the refund was approved, the bank could not
               accept it, which routes are available, and that a billing specialist will
               contact them within 2 business days. Give the decline code as a reference the
               customer can quote to their bank, but not the processor's full message, which
               can mention fraud checks.
            5. Note everything in the order timeline. Billing closes the ticket when the funds
               are sent and mails the customer a receipt.
            """
        ),
        "decline_codes": [
            {"code": "processing_error", "meaning": "processor fault", "retry": "once, after 30 min"},
            {"code": "issuer_unavailable", "meaning": "bank offline", "retry": "once, after 30 min"},
            {"code": "try_again_later", "meaning": "rate limited", "retry": "once, after 30 min"},
            {"code": "card_closed, account_closed", "meaning": "card or account closed",
             "retry": "never"},
            {"code": "account_frozen", "meaning": "bank froze the account", "retry": "never"},
            {"code": "lost_or_stolen", "meaning": "card reported lost or stolen",
             "retry": "never; also flag for fraud review"},
            {"code": "do_not_honor", "meaning": "bank refused without reason",
             "retry": "never for refunds"},
        ],
        "related": ["KB-200 Refund policy", "KB-231 Chargebacks and disputes",
                    "FC-7 Changing a refund destination"],
    }


def build_refund() -> Transcript:
    t = Transcript("refund", seed=2024_0531, system_prompt=REFUND_SYSTEM, tools=REFUND_TOOLS,
                   indent=2)
    t.user(prose(
        f"""
        Hi, I bought the Ridgeline 2 tent on 2 May (order {REFUND_ORDER}). It arrived with two
        of the pole sections cracked, so I sent it back with your prepaid label on 24 May
        (UPS 1Z8A0W470392771546). Could you refund me, including the shipping I paid? I kept
        the footprint, that one is fine.
        """
    ) + "\n\nThanks,\nPriya Raman")
    t.turn(None, Call("lookup_order", {"order_id": REFUND_ORDER}, _refund_order()))
    t.turn(None, Call("get_return", {"rma_or_tracking": "1Z8A0W470392771546"}, _refund_return()))
    t.turn(
        "The tent was received and inspected as damaged in transit; checking what is refundable.",
        Call("check_refund_eligibility", {"order_id": REFUND_ORDER, "skus": ["TNT-RDG2-GRN"],
                                          "reason": "damaged_in_transit"},
             _refund_eligibility()),
    )
    t.turn(None, Call("issue_refund", {"order_id": REFUND_ORDER, "amount": 322.90,
                                       "currency": "USD", "reason": "damaged_in_transit",
                                       "idempotency_key": "rfd-FH-20931-7744-RMA-55102"},
                      _refund_decline()))
    t.turn(
        prose(
            f"""
            The refund was declined with {REFUND_DECLINE} and retryable=false: the Visa ending
            4417 is closed, so retrying it would fail the same way. Sending the money to
            another card or to store credit is not mine to decide. Checking what the customer
            has on file, then the policy for failed refunds.
            """
        ),
        Call("get_customer", {"customer_id": REFUND_CUSTOMER}, _refund_customer()),
    )
    t.turn(None, Call("search_policy", {"query": "refund failed original payment method closed card"},
                      _refund_policy_article()))
    t.turn(
        prose(
            f"""
            KB-214 applies: {REFUND_DECLINE} is permanent, so no retry; the Mastercard ending
            0923 is on file but moving the refund there needs Priya's written consent and a
            billing specialist. Escalating at high priority (over $250).
            """
        ),
        Call("create_billing_escalation", {
            "order_id": REFUND_ORDER,
            "amount": 322.90,
            "summary": "Approved refund for RMA-55102 (tent damaged in transit: item 289.00, tax "
                       "20.95, shipping 12.95) declined by Tessera: Visa ending 4417 closed. "
                       "Not retried. Customer to choose a new destination.",
            "decline_code": REFUND_DECLINE,
            "customer_options": ["Mastercard ending 0923 (on file, added 2024-05-19)",
                                 "ACH transfer to a US bank account",
                                 "store credit with 10% bonus"],
            "priority": "high",
        }, {
            "ticket_id": "BIL-58213",
            "queue": "billing-refunds",
            "priority": "high",
            "status": "open",
            "sla": {"first_contact_by": "2024-06-04T17:00:00-07:00", "business_days": 2},
            "assigned_to": None,
            "created_at": "2024-05-31T10:26:05-07:00",
            "url": "https://support.fernhill.example/billing/BIL-58213",
        }),
    )
    t.turn(None, Call("add_order_note", {
        "order_id": REFUND_ORDER,
        "note": f"Refund of $322.90 approved for RMA-55102 (damaged in transit). Tessera "
                f"declined it: {REFUND_DECLINE}, Visa 4417 closed, not retryable; not retried. "
                "Escalated to billing as BIL-58213 (high). Customer told to expect contact "
                "within 2 business days; options: Mastercard 0923, ACH, store credit +10%.",
    }, {"ok": True, "order_id": REFUND_ORDER, "note_id": "note_88213",
        "at": "2024-05-31T10:26:31-07:00"}))
    t.answer(prose(
        f"""
        Hi Priya,

        Thank you for sending the tent back, and I'm sorry it reached you with broken poles.
        Our warehouse received it on 28 May and confirmed the damage happened in transit, so
        your refund is approved in full: $289.00 for the tent, $20.95 tax and the $12.95 you
        paid for shipping, $322.90 in total. The footprint stays with you and isn't affected.

        There is one snag. When we sent the refund to the Visa card ending in 4417 that you
        paid with, your bank turned it away because that card account has been closed
        (reference {REFUND_DECLINE}). The money has not left us, and trying the same card
        again would not work.

        I've passed your refund to our billing team (ticket BIL-58213) at high priority. A
        billing specialist will contact you by Tuesday 4 June to confirm where you'd like the
        $322.90 to go:
        - the Mastercard ending in 0923 on your account,
        - a transfer to a US bank account, or
        - Fernhill store credit, with a 10% bonus ($355.19).

        If you already know which you prefer, just reply to this email and we'll add it to the
        ticket so it moves faster.

        Fernhill Support
        """
    ))
    return t
