package sqsqueue_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/queue/queuetest"
	"github.com/yp/paysvc/shared/queue/sqsqueue"
	"github.com/yp/paysvc/shared/testutil/moto"
)

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

// newQueues creates a queue and its DLQ on moto for t.
func newQueues(t *testing.T) *sqsqueue.Queue {
	t.Helper()
	client := moto.SQSClient(t, moto.Endpoint(t))
	name := moto.QueueName(t)
	url, dlq, err := sqsqueue.CreateQueues(context.Background(), client, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(dlq)})
	})
	return sqsqueue.New(client, url, dlq)
}

func TestContract(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queuetest.Harness {
		q := newQueues(t)
		return queuetest.Harness{
			Queue: q, DeadLetters: q,
			Receive: func(t *testing.T) []queue.Job {
				var out []queue.Job
				for {
					msgs, err := q.Receive(context.Background(), 10, 0)
					if err != nil {
						t.Fatal(err)
					}
					if len(msgs) == 0 {
						return out
					}
					for _, m := range msgs {
						if m.Err != nil {
							t.Fatalf("message %s: %v", m.ID, m.Err)
						}
						out = append(out, m.Job)
						if err := q.Delete(context.Background(), m.ReceiptHandle); err != nil {
							t.Fatal(err)
						}
					}
				}
			},
		}
	})
}

func TestEnqueueDelayLimit(t *testing.T) {
	q := newQueues(t)
	err := q.Enqueue(context.Background(), queue.Job{DeliveryID: "msg_1", Attempt: 1}, 16*time.Minute)
	if err == nil {
		t.Fatal("a delay beyond SQS's 15 minutes was accepted")
	}
}
