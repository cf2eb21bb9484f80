package upstream

// Split types of the upstream's split format (Adyen for Platforms).
const (
	SplitBalanceAccount = "BalanceAccount"
	SplitCommission     = "Commission"
	SplitRemainder      = "Remainder"
	SplitPaymentFee     = "PaymentFee"
	SplitSurcharge      = "Surcharge"
	SplitTip            = "Tip"
	SplitVAT            = "VAT"
	SplitDefault        = "Default"
)

// Split is one instruction of how to split a payment amount between balance
// accounts (the upstream's Split object).
type Split struct {
	// Account is the balance account that receives this part; required for
	// BalanceAccount and Commission splits on the balance platform.
	Account string `json:"account,omitempty"`
	// Amount is this part of the payment. Its currency may be omitted (then
	// it is the payment's currency).
	Amount *SplitAmount `json:"amount,omitempty"`
	// Type is the split type, e.g. SplitBalanceAccount or SplitCommission.
	Type string `json:"type"`
	// Reference is a unique reference of this split, shown in reports.
	Reference string `json:"reference,omitempty"`
	// Description is a free-text description of this split.
	Description string `json:"description,omitempty"`
}

// SplitAmount is the amount of a Split, in minor units.
type SplitAmount struct {
	Value    int64  `json:"value"`
	Currency string `json:"currency,omitempty"`
}

// LineItem is one line of an order (the upstream's LineItem object).
// Amounts are in minor units.
type LineItem struct {
	ID                 string `json:"id,omitempty"`
	Description        string `json:"description,omitempty"`
	Quantity           int64  `json:"quantity,omitempty"`
	AmountExcludingTax *int64 `json:"amountExcludingTax,omitempty"`
	AmountIncludingTax *int64 `json:"amountIncludingTax,omitempty"`
	TaxAmount          *int64 `json:"taxAmount,omitempty"`
	// TaxPercentage is the tax rate in minor units of a percent
	// (e.g. 2100 for 21%), as the upstream defines it.
	TaxPercentage *int64 `json:"taxPercentage,omitempty"`
	ProductURL    string `json:"productUrl,omitempty"`
	ImageURL      string `json:"imageUrl,omitempty"`
	ItemCategory  string `json:"itemCategory,omitempty"`
	SKU           string `json:"sku,omitempty"`
	Brand         string `json:"brand,omitempty"`
	Color         string `json:"color,omitempty"`
	Size          string `json:"size,omitempty"`
	Manufacturer  string `json:"manufacturer,omitempty"`
	UPC           string `json:"upc,omitempty"`
}

// Name is a shopper's name.
type Name struct {
	FirstName string `json:"firstName,omitempty"`
	LastName  string `json:"lastName,omitempty"`
}

// Shopper interactions.
const (
	ShopperInteractionEcommerce = "Ecommerce"
	ShopperInteractionContAuth  = "ContAuth"
)

// Result codes of payment responses.
const (
	ResultAuthorised          = "Authorised"
	ResultRefused             = "Refused"
	ResultError               = "Error"
	ResultCancelled           = "Cancelled"
	ResultPending             = "Pending"
	ResultReceived            = "Received"
	ResultRedirectShopper     = "RedirectShopper"
	ResultChallengeShopper    = "ChallengeShopper"
	ResultIdentifyShopper     = "IdentifyShopper"
	ResultPresentToShopper    = "PresentToShopper"
	ResultPartiallyAuthorised = "PartiallyAuthorised"
)

// StatusReceived is the status of every accepted modification request.
const StatusReceived = "received"

// AdditionalManualCapture is the additionalData key that asks for manual
// capture ("true"; v71 AdditionalDataCommon.manualCapture).
const AdditionalManualCapture = "manualCapture"
