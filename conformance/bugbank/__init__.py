"""The bug bank (``kconform bugbank``): real bugs of released connectors and clients, each run on its buggy
and its fixed release through the ordinary suite, and judged on the requirement ids it breaks."""
