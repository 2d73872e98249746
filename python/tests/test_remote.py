"""URLs in the Python package: ``mfu.read`` and ``mfu.summary`` of s3:// objects and prefixes, configured
with ``storage_options`` as polars and pandas take them, against moto's S3 server run in this process on
127.0.0.1 (skipped where moto is not installed)."""

import socket

import pytest

import mfu

from conftest import FIXTURES

moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")

RUN = dict(device="NVIDIA H100 80GB HBM3", dtype="bf16", num_devices=8, flops_per_token=4.2e10)


@pytest.fixture(scope="module")
def s3():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                          aws_secret_access_key="test", region_name="us-east-1")
    client.create_bucket(Bucket="logs")
    client.upload_file(str(FIXTURES / "runs.jsonl"), "logs", "runs/runs.jsonl")
    for path in sorted((FIXTURES / "tensorboard" / "runs").rglob("*")):
        if path.is_file():
            key = "tb/" + path.relative_to(FIXTURES / "tensorboard" / "runs").as_posix()
            client.upload_file(str(path), "logs", key)
    options = {
        "aws_endpoint_url": endpoint,
        "aws_access_key_id": "test",
        "aws_secret_access_key": "test",
        "aws_region": "us-east-1",
        "aws_allow_http": "true",
    }
    yield options
    server.stop()


def test_read_a_url_as_a_path(s3):
    remote = mfu.read("s3://logs/runs/runs.jsonl", storage_options=s3)
    local = mfu.read(FIXTURES / "runs.jsonl")
    assert remote.equals(local)


def test_a_prefix_of_run_folders(s3):
    remote = mfu.read("s3://logs/tb/", storage_options=s3, **RUN)
    local = mfu.read(FIXTURES / "tensorboard" / "runs", **RUN)
    assert remote.num_rows == local.num_rows > 0
    # The same rows, the input named by its URL.
    assert remote.drop(["source_file"]).equals(local.drop(["source_file"]))
    assert set(remote["source_file"].to_pylist()) == {"s3://logs/tb/tbx", "s3://logs/tb/tf2"}


def test_summary_of_a_url(s3):
    remote = mfu.summary("s3://logs/runs/runs.jsonl", storage_options=s3)
    local = mfu.summary(str(FIXTURES / "runs.jsonl"))
    assert remote.equals(local)


def test_errors_name_the_url_and_map_to_python_exceptions(s3):
    with pytest.raises(FileNotFoundError, match="s3://logs/nothing.jsonl: no such object or prefix"):
        mfu.read("s3://logs/nothing.jsonl", storage_options=s3, **RUN)
    with pytest.raises(FileNotFoundError, match="no such bucket"):
        mfu.read("s3://no-such-bucket/x.jsonl", storage_options=s3, **RUN)
    secret = dict(s3, aws_secret_access_key="do-not-print-me")
    try:
        mfu.read("s3://logs/runs/runs.jsonl", storage_options=secret)
    except Exception as e:  # moto does not check signatures here; whatever is said holds no secret
        assert "do-not-print-me" not in str(e)
