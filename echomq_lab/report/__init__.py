"""A benchmark run read back, and request counting live.

- :mod:`echomq_lab.report.schema`: the results file loaded, and its values read with one clear
  error each;
- :mod:`echomq_lab.report.targets`: the goals, each judged from the numbers;
- :mod:`echomq_lab.report.results`: the whole file as a :class:`~.results.Report` of plain
  rows, and its tables as text;
- :mod:`echomq_lab.report.charts`: the report's bar charts (matplotlib);
- :mod:`echomq_lab.report.counting`: the requests a client sends, counted as they go.

Importing this package loads none of them: reading results needs no widget or plotting library.
"""
