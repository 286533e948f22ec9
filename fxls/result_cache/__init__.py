"""The persistent result cache: a file's report kept under the fingerprint of everything it
depends on, so that an unchanged file is not analysed again (``fxls check``; the editor's
first diagnostics on open).

- ``file_fingerprint``: the key (the file's text and its workspace dependencies, settings,
  fxls's code, the interpreter and its libraries), built from ``code_version``,
  ``environment`` and ``dependencies``;
- ``store``: the entries on disk (``ResultCache.lookup``/``store``, the size bound), in the
  folder ``location`` says;
- ``check_use``: ``fxls check``'s lookups and stores; ``commands``: ``fxls cache``.
"""

from fxls.result_cache.file_fingerprint import Fingerprint, fingerprint
from fxls.result_cache.location import cache_disabled, cache_folder
from fxls.result_cache.store import CacheUsage, ResultCache

__all__ = ["CacheUsage", "Fingerprint", "ResultCache", "cache_disabled", "cache_folder",
           "fingerprint"]
