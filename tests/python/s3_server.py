"""An S3-compatible server for the object-storage tests (moto's server mode, on 127.0.0.1 only), and
the few things the tests do to it that mfu itself must not be trusted with.

    python3 s3_server.py serve PORT [--auth]     # prints "ready", serves until standard input closes
    python3 s3_server.py put ENDPOINT BUCKET PREFIX FOLDER   # the folder's files (links left out)
    python3 s3_server.py ls ENDPOINT BUCKET PREFIX           # "key size" lines
    python3 s3_server.py user ENDPOINT                       # an IAM user's key id and secret

With --auth the server checks signatures against its IAM users (moto's INITIAL_NO_AUTH_ACTION_COUNT:
the first few requests, which create the user, go unchecked). Clients of the unchecked server use the
key "test"/"test".
"""

import json
import os
import sys


def client(endpoint, service="s3", key="test", secret="test"):
    import boto3

    return boto3.client(
        service,
        endpoint_url=endpoint,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        region_name="us-east-1",
    )


def serve(port, auth):
    if auth:
        os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "5"
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    print("ready", flush=True)
    sys.stdin.read()
    server.stop()


def put(endpoint, bucket, prefix, folder):
    s3 = client(endpoint)
    names = [b["Name"] for b in s3.list_buckets().get("Buckets", [])]
    if bucket not in names:
        s3.create_bucket(Bucket=bucket)
    count = 0
    for root, _, files in os.walk(folder):
        for name in sorted(files):
            path = os.path.join(root, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            key = "/".join(p for p in [prefix.strip("/"), os.path.relpath(path, folder)] if p)
            s3.upload_file(path, bucket, key.replace(os.sep, "/"))
            count += 1
    print(count)


def ls(endpoint, bucket, prefix):
    s3 = client(endpoint)
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    for page in pages:
        for item in page.get("Contents", []):
            print(item["Key"], item["Size"])
    # Uploads started and never completed or aborted would show here.
    for upload in s3.list_multipart_uploads(Bucket=bucket, Prefix=prefix).get("Uploads", []):
        print("UPLOAD", upload["Key"])


def user(endpoint):
    iam = client(endpoint, "iam")
    iam.create_user(UserName="mfu")
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
    iam.put_user_policy(UserName="mfu", PolicyName="s3", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="mfu")["AccessKey"]
    print(key["AccessKeyId"], key["SecretAccessKey"])


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "serve":
        serve(int(args[0]), "--auth" in args)
    elif command == "put":
        put(*args)
    elif command == "ls":
        ls(*args)
    elif command == "user":
        user(*args)
    else:
        sys.exit(f"unknown command {command}")
