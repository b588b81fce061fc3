"""Export and import of runs, definitions and workspaces as the original CLI's files and ZIPs.

* `export_run` → a run ZIP (run_manifest.yaml, scenarios/, transcripts/, definition.md,
  summary.csv, results.jsonl); `export_definition` → a `.md` or a lineage ZIP;
  `export_workspace` → everything of an organisation. `write_run_zip` and
  `write_workspace` stream the same bytes into a file, in memory that does not grow with
  the runs.
* `import_runs` ← a run ZIP, a CLI run folder or a folder of CLI transcripts (safely: see
  `archive_safety`), one run per CLI run id, idempotent (see `run_import`); a workspace ZIP
  is restored whole — definition and rubric trees, then runs (see `workspace_import`).
"""

from valuerank.exchange.archive_safety import Limits
from valuerank.exchange.definition_export import ExportedFile, export_definition
from valuerank.exchange.errors import ArchiveTooLargeError, ImportFormatError, UnsafeArchiveError
from valuerank.exchange.importing import import_runs, import_workspace, import_zip_bytes
from valuerank.exchange.run_export import RunExport, export_run, write_run_zip
from valuerank.exchange.run_import import ImportedRun
from valuerank.exchange.workspace import export_workspace, write_workspace
from valuerank.exchange.workspace_import import WorkspaceImport

__all__ = [
    "ArchiveTooLargeError",
    "ExportedFile",
    "ImportFormatError",
    "ImportedRun",
    "Limits",
    "RunExport",
    "UnsafeArchiveError",
    "WorkspaceImport",
    "export_definition",
    "export_run",
    "export_workspace",
    "import_runs",
    "import_workspace",
    "import_zip_bytes",
    "write_run_zip",
    "write_workspace",
]
