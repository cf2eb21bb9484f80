module github.com/yp/paysvc/shared/client

go 1.26
