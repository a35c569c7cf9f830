"""Statistics shared by the steps and reports: multiple-comparison corrections."""
