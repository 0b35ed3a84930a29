app_name = "dashboards"
urlpatterns: list = []
