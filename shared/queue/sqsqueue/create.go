package sqsqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Queue attributes as in template.yaml (DeliveriesQueue, DeliveriesDLQ).
const (
	// MaxReceiveCount is the redrive policy's maxReceiveCount: one receive
	// per attempt, webhooks.MaxAttempts of them.
	MaxReceiveCount    = 10
	visibilityTimeout  = 360     // 6 x the dispatcher's 60 s timeout
	retentionSeconds   = 345600  // 4 days
	dlqRetentionSecond = 1209600 // 14 days
)

// CreateQueues creates the deliveries queue name and its dead-letter queue
// name+"-dlq" with the template's attributes and returns their URLs. It is
// idempotent. Production queues come from the SAM template; this is for
// tests and local runs against moto.
func CreateQueues(ctx context.Context, client *sqs.Client, name string) (queueURL, dlqURL string, err error) {
	return CreateQueuesWith(ctx, client, name, Attributes{
		VisibilityTimeout: visibilityTimeout, Retention: retentionSeconds, MaxReceiveCount: MaxReceiveCount,
	})
}

// Attributes are a queue's settings as the template gives them (seconds).
type Attributes struct {
	VisibilityTimeout int
	Retention         int
	MaxReceiveCount   int // the redrive policy's
}

// CreateQueuesWith is CreateQueues for another queue of the template:
// name with attrs and its dead-letter queue name+"-dlq" (14 days).
func CreateQueuesWith(ctx context.Context, client *sqs.Client, name string, attrs Attributes) (queueURL, dlqURL string, err error) {
	wrap := func(err error) error { return fmt.Errorf("sqsqueue: create queues %q: %w", name, err) }
	dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String(name + "-dlq"),
		Attributes: map[string]string{string(types.QueueAttributeNameMessageRetentionPeriod): strconv.Itoa(dlqRetentionSecond)},
	})
	if err != nil {
		return "", "", wrap(err)
	}
	arn, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", "", wrap(err)
	}
	policy, err := json.Marshal(map[string]any{
		"deadLetterTargetArn": arn.Attributes[string(types.QueueAttributeNameQueueArn)],
		"maxReceiveCount":     strconv.Itoa(attrs.MaxReceiveCount),
	})
	if err != nil {
		return "", "", wrap(err)
	}
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String(name),
		Attributes: map[string]string{
			string(types.QueueAttributeNameVisibilityTimeout):      strconv.Itoa(attrs.VisibilityTimeout),
			string(types.QueueAttributeNameMessageRetentionPeriod): strconv.Itoa(attrs.Retention),
			string(types.QueueAttributeNameRedrivePolicy):          string(policy),
		},
	})
	if err != nil {
		return "", "", wrap(err)
	}
	return aws.ToString(q.QueueUrl), aws.ToString(dlq.QueueUrl), nil
}
