#!/usr/bin/env python3
"""Regenerates the sample events in this directory (deterministic output).

    python3 events/generate.py

API events are API Gateway REST (v1) proxy events as the deployed stage sends
them; the notification events carry a valid upstream HMAC computed with the
documented local/test key below (the upstream's algorithm, docs/webhooks.md).
Edit the bodies here, not in the JSON files.
"""

import base64
import hashlib
import hmac
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# Documented local/test values (events/README.md). Never valid anywhere real.
API_KEY = "yp_test_demoKey" + "0" * 36  # 43 base62 chars after the prefix, like a real key
MERCHANT_ID = "m_demo"
SITE_ID = "site_demo"
UPSTREAM_MERCHANT_ACCOUNT = "DemoShopECOM"  # the demo seed's upstream account
HMAC_KEY_HEX = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
NOTIFICATION_USERNAME = "paysvc-notify"
NOTIFICATION_PASSWORD = "notify-test-password"
PSP_REFERENCE = "QFQTPCQ8HXSKGK82"  # the demo payment (16 chars)
CAPTURE_PSP_REFERENCE = "V4HZ4RBFJGXXGN82"

ACCOUNT_ID = "123456789012"
REGION = "eu-west-1"
API_ID = "a1b2c3d4e5"
STAGE = "test"
REQUEST_TIME_EPOCH = 1763892000000  # 2025-11-23T10:00:00Z
REQUEST_TIME = "23/Nov/2025:10:00:00 +0000"

assert len(API_KEY) - len("yp_test_") == 43


def upstream_hmac(item, key_hex=HMAC_KEY_HEX):
    """Adyen standard-notification HMAC: signed string
    pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:eventCode:success,
    key hex-decoded, HMAC-SHA256, base64."""
    amount = item.get("amount", {})
    fields = [
        item.get("pspReference", ""),
        item.get("originalReference", ""),
        item.get("merchantAccountCode", ""),
        item.get("merchantReference", ""),
        str(amount.get("value", "")),
        amount.get("currency", ""),
        item.get("eventCode", ""),
        item.get("success", ""),
    ]
    data = ":".join(fields).encode()
    digest = hmac.new(bytes.fromhex(key_hex), data, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def api_event(n, method, resource, path_params, body, *, headers=None, query=None, authorization=None):
    """A REST API (v1) Lambda proxy event. n makes request ids unique and stable."""
    path = resource
    for k, v in (path_params or {}).items():
        path = path.replace("{" + k + "}", v)
    request_id = f"c6af9ac6-7b61-11e6-9a41-93e8deadbe{n:02d}"
    trace = f"Root=1-6922db20-5f4c3c1a9b7e8d6f00000{n:03d}"
    h = {
        "Accept": "application/json",
        "Host": f"{API_ID}.execute-api.{REGION}.amazonaws.com",
        "User-Agent": "merchant-backend/1.0",
        "X-Amzn-Trace-Id": trace,
        "X-Forwarded-For": "203.0.113.10",
        "X-Forwarded-Port": "443",
        "X-Forwarded-Proto": "https",
    }
    if authorization is None:
        authorization = f"Bearer {API_KEY}"
    if authorization:
        h["Authorization"] = authorization
    if body is not None:
        h["Content-Type"] = "application/json"
    h.update(headers or {})
    raw_body = None if body is None else json.dumps(body, separators=(",", ":"))
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": h,
        "multiValueHeaders": {k: [v] for k, v in h.items()},
        "queryStringParameters": query,
        "multiValueQueryStringParameters": None if query is None else {k: [v] for k, v in query.items()},
        "pathParameters": path_params,
        "stageVariables": None,
        "requestContext": {
            "accountId": ACCOUNT_ID,
            "apiId": API_ID,
            "domainName": f"{API_ID}.execute-api.{REGION}.amazonaws.com",
            "domainPrefix": API_ID,
            "extendedRequestId": f"BQGJZGxkDoEFZ{n:02d}=",
            "httpMethod": method,
            "identity": {
                "accessKey": None,
                "accountId": None,
                "caller": None,
                "cognitoAuthenticationProvider": None,
                "cognitoAuthenticationType": None,
                "cognitoIdentityId": None,
                "cognitoIdentityPoolId": None,
                "principalOrgId": None,
                "sourceIp": "203.0.113.10",
                "user": None,
                "userAgent": "merchant-backend/1.0",
                "userArn": None,
            },
            "path": f"/{STAGE}{path}",
            "protocol": "HTTP/1.1",
            "requestId": request_id,
            "requestTime": REQUEST_TIME,
            "requestTimeEpoch": REQUEST_TIME_EPOCH + n,
            "resourceId": f"r{n:04d}x",
            "resourcePath": resource,
            "stage": STAGE,
        },
        "body": raw_body,
        "isBase64Encoded": False,
    }


def notification_event(n, item, *, sign=True):
    item = dict(item)
    item["additionalData"] = dict(item.get("additionalData", {}))
    if sign:
        item["additionalData"]["hmacSignature"] = upstream_hmac(item)
    else:
        item["additionalData"]["hmacSignature"] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
    body = {"live": "false", "notificationItems": [{"NotificationRequestItem": item}]}
    basic = base64.b64encode(f"{NOTIFICATION_USERNAME}:{NOTIFICATION_PASSWORD}".encode()).decode()
    return api_event(
        n,
        "POST",
        "/v1/notifications/upstream",
        None,
        body,
        authorization=f"Basic {basic}",
        headers={"User-Agent": "Adyen HttpClient 1.0"},
    )


def sqs_records(bodies, queue, sender, id_base):
    """An SQS event of (body, receive count) messages as the Lambda trigger passes them."""
    records = []
    for i, (body, receives) in enumerate(bodies, start=1):
        records.append({
            "messageId": f"{id_base}{i:04d}",
            "receiptHandle": f"AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a{i:02d}demoReceiptHandle",
            "body": body,
            "attributes": {
                "ApproximateReceiveCount": str(receives),
                "SentTimestamp": str(REQUEST_TIME_EPOCH + i),
                "SenderId": f"AROAEXAMPLEID:paysvc-test-{sender}",
                "ApproximateFirstReceiveTimestamp": str(REQUEST_TIME_EPOCH + 1000 + i),
            },
            "messageAttributes": {},
            "md5OfBody": hashlib.md5(body.encode()).hexdigest(),
            "eventSource": "aws:sqs",
            "eventSourceARN": f"arn:aws:sqs:{REGION}:{ACCOUNT_ID}:paysvc-test-{queue}-1A2B3C4D5E6F",
            "awsRegion": REGION,
        })
    return {"Records": records}


def compact(v):
    return json.dumps(v, separators=(",", ":"))


def sqs_event():
    jobs = [("dlv_01JDEMO0000000000000000001", 1), ("dlv_01JDEMO0000000000000000002", 1), ("dlv_01JDEMO0000000000000000003", 3)]
    return sqs_records([(compact({"deliveryId": d, "attempt": a}), a) for d, a in jobs],
                       "DeliveriesQueue", "NotificationsFunction", "059f36b4-87a3-44ab-83d2-66197510")


def schedule_event():
    """The input EventBridge Scheduler's schedule sends the scheduler
    function every minute (template.yaml SchedulerSchedule Target.Input):
    one pass of the timed jobs."""
    return {"source": "paysvc.scheduler"}


AMOUNT = {"value": 1000, "currency": "EUR"}
RETURN_URL = "https://shop.example.com/checkout/return"
SITE = {"siteId": SITE_ID}
PAYMENT = {"siteId": SITE_ID, "pspReference": PSP_REFERENCE}
# A webhook delivery of the demo payment's AUTHORISATION (the format of
# webhooks.DeliveryID: "msg_" and 26 base32 characters).
DELIVERY_ID = "msg_q4x7m2k9v3p5r8t1y6w0z2b4c6"
METADATA = {"metadata.merchantId": MERCHANT_ID, "metadata.siteId": SITE_ID, "metadata.paymentSource": "advanced"}


def idem(key):
    return {"Idempotency-Key": key}


EVENTS = {
    # file name: (function logical id, event)
    "config.json": ("ConfigFunction", api_event(1, "GET", "/v1/ecom/config", None, None)),
    "sessions.json": ("SessionsFunction", api_event(
        2, "POST", "/v1/ecom/{siteId}/sessions", SITE,
        {
            "amount": AMOUNT,
            "returnUrl": RETURN_URL,
            "reference": "order-1001",
            "shopperLocale": "en-GB",
            "shopperEmail": "shopper@example.com",
            "lineItems": [
                {"id": "sku-1", "description": "Room, 1 night", "quantity": 1,
                 "amountIncludingTax": 1000, "amountExcludingTax": 826, "taxAmount": 174, "taxPercentage": 2100},
            ],
        },
        headers=idem("sess-order-1001"))),
    "payment-methods.json": ("PaymentsFunction", api_event(
        3, "POST", "/v1/ecom/{siteId}/payment-methods", SITE,
        {"amount": AMOUNT, "shopperLocale": "en-GB"})),
    "payments.json": ("PaymentsFunction", api_event(
        4, "POST", "/v1/ecom/{siteId}/payments", SITE,
        {
            "amount": AMOUNT,
            "reference": "order-1002",
            "returnUrl": RETURN_URL,
            # A pre-authorisation: amount-updates.json can change its amount.
            "additionalData": {"authorisationType": "PreAuth"},
            "paymentMethod": {
                "type": "scheme",
                "encryptedCardNumber": "test_4111111111111111",
                "encryptedExpiryMonth": "test_03",
                "encryptedExpiryYear": "test_2030",
                "encryptedSecurityCode": "test_737",
                "holderName": "APPROVED",
            },
            "browserInfo": {
                "acceptHeader": "text/html", "colorDepth": 24, "language": "en-GB", "javaEnabled": False,
                "screenHeight": 1080, "screenWidth": 1920, "timeZoneOffset": 0,
                "userAgent": "Mozilla/5.0 (X11; Linux x86_64)",
            },
            "channel": "Web",
            "origin": "https://shop.example.com",
        },
        headers=idem("pay-order-1002"))),
    "payments-details.json": ("PaymentsFunction", api_event(
        5, "POST", "/v1/ecom/{siteId}/payments/details", SITE,
        # base64 of {"transStatus":"Y"}: a completed 3DS2 challenge
        {"details": {"threeDSResult": base64.b64encode(b'{"transStatus":"Y"}').decode()}},
        headers=idem("details-order-1002"))),
    "stored-payment-methods-delete.json": ("PaymentsFunction", api_event(
        6, "DELETE", "/v1/ecom/{siteId}/stored-payment-methods/{storedPaymentMethodId}",
        {"siteId": SITE_ID, "storedPaymentMethodId": "M5N7TQ4TG5PFWR50"}, None,
        query={"shopperReference": "guest-7f3a9c"})),
    "captures.json": ("ModificationsFunction", api_event(
        7, "POST", "/v1/ecom/{siteId}/payments/{pspReference}/captures", PAYMENT,
        {"amount": AMOUNT, "reference": "capture-1002"},
        headers=idem("capture-order-1002"))),
    "reversals.json": ("ModificationsFunction", api_event(
        8, "POST", "/v1/ecom/{siteId}/payments/{pspReference}/reversals", PAYMENT,
        {"reference": "reversal-1002"},
        headers=idem("reversal-order-1002"))),
    "cancels.json": ("ModificationsFunction", api_event(
        19, "POST", "/v1/ecom/{siteId}/payments/{pspReference}/cancels", PAYMENT,
        {"reference": "cancel-1003"},
        headers=idem("cancel-order-1003"))),
    "amount-updates.json": ("ModificationsFunction", api_event(
        9, "POST", "/v1/ecom/{siteId}/payments/{pspReference}/amount-updates", PAYMENT,
        {"pspReference": PSP_REFERENCE, "amount": {"value": 1500, "currency": "EUR"}, "reference": "adjust-1002"},
        headers=idem("adjust-order-1002"))),
    "refunds.json": ("ModificationsFunction", api_event(
        13, "POST", "/v1/ecom/{siteId}/payments/{pspReference}/refunds", PAYMENT,
        {"amount": {"value": 400, "currency": "EUR"}, "reference": "refund-1002",
         "lineItems": [{"id": "sku-1", "description": "Room, 1 night", "quantity": 1, "amountIncludingTax": 400}]},
        headers=idem("refund-order-1002"))),
    "payment-lookup.json": ("LookupsFunction", api_event(
        14, "GET", "/v1/ecom/{siteId}/payments/{pspReference}", PAYMENT, None)),
    "events.json": ("LookupsFunction", api_event(
        15, "GET", "/v1/ecom/events", None, None,
        query={"limit": "20", "pspReference": PSP_REFERENCE})),
    "webhook-deliveries.json": ("LookupsFunction", api_event(
        16, "GET", "/v1/ecom/webhook-deliveries", None, None,
        query={"status": "failed", "limit": "20"})),
    "webhook-delivery-retry.json": ("WebhooksFunction", api_event(
        17, "POST", "/v1/ecom/webhook-deliveries/{deliveryId}/retry", {"deliveryId": DELIVERY_ID}, {},
        headers=idem("retry-" + DELIVERY_ID))),
    "webhooks-test.json": ("WebhooksFunction", api_event(
        18, "POST", "/v1/ecom/webhooks/test", None, {},
        headers=idem("webhooks-test-1"))),
    "notification-authorisation.json": ("NotificationsFunction", notification_event(10, {
        "additionalData": dict(METADATA),
        "amount": AMOUNT,
        "eventCode": "AUTHORISATION",
        "eventDate": "2025-11-23T11:00:05+01:00",
        "merchantAccountCode": UPSTREAM_MERCHANT_ACCOUNT,
        "merchantReference": "order-1002",
        "operations": ["CANCEL", "CAPTURE", "REFUND"],
        "paymentMethod": "visa",
        "pspReference": PSP_REFERENCE,
        "reason": "033899:1111:03/2030",
        "success": "true",
    })),
    "notification-capture.json": ("NotificationsFunction", notification_event(11, {
        "additionalData": dict(METADATA),
        "amount": AMOUNT,
        "eventCode": "CAPTURE",
        "eventDate": "2025-11-23T11:05:00+01:00",
        "merchantAccountCode": UPSTREAM_MERCHANT_ACCOUNT,
        "merchantReference": "capture-1002",
        "originalReference": PSP_REFERENCE,
        "paymentMethod": "visa",
        "pspReference": CAPTURE_PSP_REFERENCE,
        "reason": "",
        "success": "true",
    })),
    "notification-bad-hmac.json": ("NotificationsFunction", notification_event(12, {
        "additionalData": dict(METADATA),
        "amount": AMOUNT,
        "eventCode": "AUTHORISATION",
        "eventDate": "2025-11-23T11:00:05+01:00",
        "merchantAccountCode": UPSTREAM_MERCHANT_ACCOUNT,
        "merchantReference": "order-1002",
        "paymentMethod": "visa",
        "pspReference": PSP_REFERENCE,
        "reason": "",
        "success": "true",
    }, sign=False)),
    "sqs-deliveries.json": ("WebhookDispatcherFunction", sqs_event()),
    "schedule-scheduler.json": ("SchedulerFunction", schedule_event()),
}


def main():
    # Self-check of the HMAC code against the upstream's published test vector.
    vector = {"pspReference": "pspReference", "originalReference": "originalReference",
              "merchantAccountCode": "merchantAccount", "merchantReference": "reference",
              "amount": {"value": 1000, "currency": "EUR"}, "eventCode": "EVENT", "success": "true"}
    got = upstream_hmac(vector, "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00")
    assert got == "ipnxGCaUZ4l8TUW75a71/ghd2Fe5ffvX0pV4TLTntIc=", got

    for name, (_, event) in EVENTS.items():
        with open(os.path.join(HERE, name), "w") as f:
            json.dump(event, f, indent=2)
            f.write("\n")
        print(f"wrote events/{name}")


if __name__ == "__main__":
    main()
