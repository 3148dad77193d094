package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// s3Owner is the owner file of an S3 replica: an object beside the ltx/
// prefix. Litestream's client keeps its S3 client to itself, so this one is
// configured as Litestream configures its own (region, endpoint, path style,
// credentials).
type s3Owner struct {
	client *s3.Client
	bucket string
	key    string
}

func newS3Owner(ctx context.Context, rc *ReplicaConfig, cred Credentials) (*s3Owner, error) {
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion("us-east-1")}
	if cred.AccessKeyID != "" && cred.SecretAccessKey != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cred.AccessKeyID, cred.SecretAccessKey, "")))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3 configuration: %w", err)
	}
	pathStyle := rc.Endpoint != ""
	if rc.ForcePathStyle != nil {
		pathStyle = *rc.ForcePathStyle
	}
	s3opts := func(o *s3.Options) {
		o.UsePathStyle = pathStyle
		if rc.Endpoint == "" {
			return
		}
		endpoint := rc.Endpoint
		if !strings.HasPrefix(endpoint, "http://") && !strings.HasPrefix(endpoint, "https://") {
			endpoint = "https://" + endpoint
		}
		o.BaseEndpoint = aws.String(endpoint)
		// As Litestream: S3-compatible stores lack the SDK's newer checksums.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}
	switch {
	case rc.Region != "":
		cfg.Region = rc.Region
	case rc.Endpoint == "":
		region, err := manager.GetBucketRegion(ctx, s3.NewFromConfig(cfg, s3opts), rc.Bucket)
		if err != nil {
			return nil, fmt.Errorf("look up the region of bucket %s: %w", rc.Bucket, err)
		}
		cfg.Region = region
	}
	key := ownerFileName
	if p := strings.Trim(rc.Path, "/"); p != "" {
		key = p + "/" + key
	}
	return &s3Owner{client: s3.NewFromConfig(cfg, s3opts), bucket: rc.Bucket, key: key}, nil
}

func (s *s3Owner) read(ctx context.Context) (*ReplicaOwner, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.key)})
	if apiErr := smithy.APIError(nil); errors.As(err, &apiErr) && (apiErr.ErrorCode() == "NoSuchKey" || apiErr.ErrorCode() == "NotFound") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the replica's owner file: %w", err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("read the replica's owner file: %w", err)
	}
	return decodeOwner(b)
}

// create puts the object only if none exists (If-None-Match), where the
// store supports it; claimReplica reads it back either way.
func (s *s3Owner) create(ctx context.Context, o *ReplicaOwner) error {
	b, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return err
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.key),
		Body: bytes.NewReader(append(b, '\n')), ContentType: aws.String("application/json"), IfNoneMatch: aws.String("*")})
	if apiErr := smithy.APIError(nil); errors.As(err, &apiErr) && (apiErr.ErrorCode() == "PreconditionFailed" || apiErr.ErrorCode() == "ConditionalRequestConflict") {
		return errOwnerExists
	}
	if err != nil {
		return fmt.Errorf("write the replica's owner file: %w", err)
	}
	return nil
}
