"""The local Maven repository as the JVM tools see it: sbt's publishM2 writes there and spark-submit
--packages reads there, both under Java's user.home, which is the account's home folder in the password
database, not $HOME (a CI runner may point HOME at a fresh folder)."""
from __future__ import annotations

import os
import pwd
from pathlib import Path


def published(artifact: str, version: str = "0.1.0") -> Path:
    """The folder of a sparkagg artifact's version in the local Maven repository."""
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    return home / ".m2" / "repository" / "io" / "github" / "sparkagg" / artifact / version
