"""Plotly figure builders: pure functions (plain data in, ``go.Figure`` out), no Streamlit."""
