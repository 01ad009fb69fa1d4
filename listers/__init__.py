"""DirectoryLister, candidate-file planning and incremental pull."""
