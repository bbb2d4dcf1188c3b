"""What a finished search leaves: its winners, best/ and results.json, the evaluation log, report.html.

Also the one spelling of every value in tables (`format`), which the bench's sweep summaries share.
"""
