"""Framework callbacks that log honest MFU while a run trains: ``mfu.integrations.transformers`` (Trainer
and TRL's trainers) and ``mfu.integrations.lightning``. Each imports its framework; ``import mfu`` imports
none of them."""
