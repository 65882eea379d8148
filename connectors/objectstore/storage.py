"""Where the sink's objects live: S3-compatible storage or a local directory, via pyarrow.fs.

:class:`ObjectStore` writes whole objects so that only complete ones are ever visible: on S3 an
object appears when its single PUT (or multipart upload) completes; on a local filesystem the
bytes go to a hidden temporary file in the same directory that is fsynced and renamed over the
final name. Writing the same name again replaces the object, which is what makes a rewrite
after a crash harmless. Used from one task thread; pyarrow's filesystems are thread-safe.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from connectors.objectstore.config import StoreConfig

__all__ = ["ObjectStore", "StoredObject"]


@dataclass(frozen=True, slots=True)
class StoredObject:
    path: str  # relative to the store's root
    size: int


class ObjectStore:
    """A bucket (S3) or directory (file://) holding objects under relative paths."""

    def __init__(self, config: StoreConfig) -> None:
        root = config.local_root
        self.local = root is not None
        self.fs: pafs.FileSystem
        if root is not None:
            self.fs = pafs.LocalFileSystem()
            self.root = root
            os.makedirs(root, exist_ok=True)
        else:
            url = config.store_url
            scheme, endpoint = (None, None)
            if url:
                scheme, _, endpoint = url.partition("://")
            self.fs = pafs.S3FileSystem(
                access_key=config.access_key,
                secret_key=config.secret_key,
                region=config.region,
                endpoint_override=endpoint or None,
                scheme=scheme or "https",
                # virtual-host addressing would need DNS for <bucket>.<endpoint>
                force_virtual_addressing=False,
                allow_bucket_creation=False,
                allow_bucket_deletion=False,
                connect_timeout=10,
                request_timeout=60,
            )
            assert config.bucket is not None
            self.root = config.bucket
        self.description = f"file://{root}" if root is not None else f"s3://{self.root}"

    def _full(self, path: str) -> str:
        return f"{self.root}/{path}"

    def write(self, path: str, data: bytes | pa.Buffer) -> None:
        """Make ``data`` the complete object at ``path`` (replacing one there)."""
        full = self._full(path)
        if not self.local:
            with self.fs.open_output_stream(full) as out:
                out.write(data)
            return
        directory = os.path.dirname(full)
        os.makedirs(directory, exist_ok=True)
        temp = os.path.join(directory, f".{os.path.basename(full)}.{uuid.uuid4().hex}.tmp")
        try:
            with open(temp, "wb") as out:
                out.write(memoryview(data))
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, full)
        except BaseException:
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # the rename itself survives a power cut
        finally:
            os.close(dir_fd)

    def list(self, prefix: str) -> list[StoredObject]:
        """The complete objects under the directory ``prefix`` (recursively); temporary files
        of interrupted local writes are not objects."""
        selector = pafs.FileSelector(self._full(prefix), allow_not_found=True, recursive=True)
        cut = len(self.root) + 1
        return [
            StoredObject(info.path[cut:], info.size or 0)
            for info in self.fs.get_file_info(selector)
            if info.type == pafs.FileType.File and not info.base_name.startswith(".")
        ]

    def read(self, path: str) -> bytes:
        with self.fs.open_input_stream(self._full(path)) as stream:
            return bytes(stream.read())

    def open_input_file(self, path: str) -> pa.NativeFile:
        """A random-access file, for reading a Parquet footer without the whole object."""
        return self.fs.open_input_file(self._full(path))

    def check(self) -> None:
        """Raise when the bucket or directory cannot be reached (at task start)."""
        info = self.fs.get_file_info(self.root)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(f"{self.description} does not exist")
